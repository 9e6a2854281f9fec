from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import path

from claimsdb.web import views

urlpatterns = [
    path("", views.index, name="index"),
    path("cases/<str:key>/record.json", views.case_record_json, name="case-record-json"),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
