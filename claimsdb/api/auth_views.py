"""API tokens: ``POST /api/v1/auth/token/`` with a username and password."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.parsers import FormParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from claimsdb import signin

from . import openapi
from .common import CanonicalJSONRenderer, DocumentJSONParser


class TokenView(ObtainAuthToken):
    """Exchange a username and password for the user's API token (created on first use)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    parser_classes = [DocumentJSONParser, FormParser]
    renderer_classes = [CanonicalJSONRenderer]
    # password guessing is throttled per account (claimsdb/signin.py), not per address
    throttle_classes: list = []

    @extend_schema(
        operation_id="auth_token_create",
        summary="Get an API token",
        description="Send a username and password; use the token as "
        "`Authorization: Token <token>` on later calls. The same token is returned until it "
        "is revoked. Failed attempts are counted per account and client address and per "
        "account: beyond a few, even the right password is refused with 429 "
        "`signin.throttled` for a while (docs/limits.md).",
        tags=["auth"],
        auth=[],
        request={"application/json": openapi.ref("TokenRequest")},
        parameters=[openapi.RETRY_AFTER_HEADER],
        examples=[
            OpenApiExample(
                "credentials",
                value={"username": "analyst", "password": "secret"},
                request_only=True,
            )
        ],
        responses={
            200: OpenApiResponse(
                response=openapi.ref("Token"),
                examples=openapi.recorded_example("token.200"),
            ),
            **openapi.error_responses(400, 415, 429, family="token"),
        },
    )
    def post(self, request: Request, *args, **kwargs) -> Response:
        try:
            return super().post(request, *args, **kwargs)
        except ValidationError:
            lockout = getattr(request, "signin_lockout", None)
            if lockout is not None:
                raise Throttled(
                    wait=lockout.retry_after, detail=lockout.message, code=signin.CODE
                ) from None
            raise
