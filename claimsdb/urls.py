from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from claimsdb.web.signin_views import SignInView

urlpatterns = [
    path("api/v1/", include("claimsdb.api.urls")),
    path("api/v1/", include("claimsdb.api.import_urls")),
    path("api/v1/", include("claimsdb.api.release_urls")),
    path("api/v1/", include("claimsdb.api.webhook_urls")),
    path("", include("claimsdb.web.urls")),
    path("", include("claimsdb.web.import_urls")),
    path("", include("claimsdb.web.release_urls")),
    path("", include("claimsdb.web.review_urls")),
    path("", include("claimsdb.web.webhook_urls")),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]

# A JSON 404 in the API's error shape under /api/, the site's page elsewhere.
handler404 = "claimsdb.api.errors.not_found_handler"
# 503 with Retry-After while the database cannot be reached; Django's 500 otherwise.
handler500 = "claimsdb.unavailable.server_error"
