"""Web pages (DESIGN.md §7)."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.index, name="index"),
    path("cases/<str:key>/record.json", views.case_record_json, name="case-record-json"),
]
