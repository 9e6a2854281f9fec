"""Upload page for reproduction results, and the reports of past imports."""

from django.urls import path

from . import imports

urlpatterns = [
    path("imports/", imports.import_list, name="import-list"),
    path("imports/<int:pk>/", imports.import_detail, name="import-detail"),
    path("imports/<int:pk>/import/", imports.import_now, name="import-now"),
]
