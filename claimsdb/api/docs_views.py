"""The OpenAPI schema and its browsable docs, public and served by the app itself.

Swagger UI and Redoc come from drf-spectacular-sidecar's static files: no page loads
anything from a CDN. Both UIs style themselves with inline styles (and Redoc searches in a
blob: worker), so their pages carry a content security policy of their own that allows
those and nothing else.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.templatetags.static import static
from django.urls import reverse
from django.utils.html import format_html
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny

from claimsdb.web.middleware import CONTENT_SECURITY_POLICY

DOCS_CONTENT_SECURITY_POLICY = (
    CONTENT_SECURITY_POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
    + "; worker-src 'self' blob:"
)


class SchemaView(SpectacularAPIView):
    """The OpenAPI 3 schema: YAML by default, JSON with ``?format=json``."""

    authentication_classes: list = []
    permission_classes = [AllowAny]


class SwaggerView(SpectacularSwaggerSplitView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    url_name = "api:schema"

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = DOCS_CONTENT_SECURITY_POLICY
        return response


REDOC_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{} — Redoc</title>
</head>
<body>
<redoc spec-url="{}"></redoc>
<script src="{}"></script>
</body>
</html>
"""


def redoc(request: HttpRequest) -> HttpResponse:
    """Redoc, from the sidecar's bundle (drf-spectacular's own template loads web fonts from
    a CDN)."""
    from drf_spectacular.settings import spectacular_settings

    page = format_html(
        REDOC_PAGE,
        spectacular_settings.TITLE,
        reverse("api:schema"),
        static("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
    )
    response = HttpResponse(page, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = DOCS_CONTENT_SECURITY_POLICY
    return response
