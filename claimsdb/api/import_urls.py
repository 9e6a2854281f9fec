"""REST API for the reproduction-results importer: imports and imported runs.

The format and what an import does: docs/repro-results-1.md.

Identifiers are matched with the API's ``key`` converter (any text), so that a malformed
one still reaches a view and gets a 404 in the API's error shape.
"""

from django.urls import path

from . import imports
from .urls import AnyKeyConverter  # noqa: F401 - registers the ``key`` converter

app_name = "imports_api"

urlpatterns = [
    path("imports/", imports.ImportListView.as_view(), name="import-list"),
    path("imports/<key:pk>/", imports.ImportDetailView.as_view(), name="import-detail"),
    path("runs/", imports.RunListView.as_view(), name="run-list"),
    path("runs/<key:run_id>/trials.csv", imports.RunTrialsView.as_view(), name="run-trials"),
    path("runs/<key:run_id>/", imports.RunDetailView.as_view(), name="run-detail"),
]
