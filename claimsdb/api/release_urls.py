"""REST API for releases.

The release number is matched as any text and checked by the view, so that a malformed
number still gets a 404 in the API's error shape rather than the site's HTML page.
"""

from django.urls import re_path

from . import osv, releases

urlpatterns = [
    re_path(r"^releases/$", releases.ReleaseListView.as_view(), name="api-release-list"),
    re_path(
        r"^releases/(?P<number>[\s\S]+)/bundle\.json$",
        releases.ReleaseBundleView.as_view(),
        name="api-release-bundle",
    ),
    re_path(
        r"^releases/(?P<number>[\s\S]+)/stix/$",
        releases.ReleaseStixView.as_view(),
        name="api-release-stix",
    ),
    re_path(
        r"^releases/(?P<number>[\s\S]+)/csv/$",
        releases.ReleaseCSVView.as_view(),
        name="api-release-csv",
    ),
    re_path(
        r"^stix/extension-schema\.json$",
        releases.stix_extension_schema,
        name="api-stix-extension-schema",
    ),
    re_path(
        r"^releases/(?P<number>[\s\S]+)/osv/$",
        osv.ReleaseOSVView.as_view(),
        name="api-release-osv",
    ),
    re_path(
        r"^releases/(?P<number>[\s\S]+)/$",
        releases.ReleaseDetailView.as_view(),
        name="api-release-detail",
    ),
]
