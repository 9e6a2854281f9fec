"""Release pages, feed and citation downloads."""

from django.urls import path

from . import releases

urlpatterns = [
    path("releases/", releases.release_list, name="release-list"),
    path("releases/new/", releases.release_new, name="release-new"),
    path("releases/feed.atom", releases.ReleaseFeed(), name="release-feed"),
    path("releases/<int:number>/", releases.release_detail, name="release-detail"),
    path("cases/<str:key>/feed.atom", releases.CaseFeed(), name="case-feed"),
    path("cases/<str:key>/cite.bib", releases.case_citation, {"fmt": "bib"}, name="case-cite-bib"),
    path(
        "cases/<str:key>/cite.json", releases.case_citation, {"fmt": "json"}, name="case-cite-json"
    ),
]
