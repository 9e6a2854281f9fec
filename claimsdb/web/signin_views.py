"""The sign-in page: Django's, saying so when password guessing has paused an account."""

from __future__ import annotations

from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.http import HttpResponse


class ThrottledAuthenticationForm(AuthenticationForm):
    lockout = None  # set when the account is paused (claimsdb/signin.py)

    def clean(self):
        try:
            return super().clean()
        except ValidationError:
            lockout = getattr(self.request, "signin_lockout", None)
            if lockout is not None:
                self.lockout = lockout
                raise ValidationError(lockout.message, code="throttled") from None
            raise


class SignInView(LoginView):
    form_class = ThrottledAuthenticationForm

    def form_invalid(self, form) -> HttpResponse:
        response = super().form_invalid(form)
        lockout = getattr(form, "lockout", None)
        if lockout is not None:
            response.status_code = 429
            response["Retry-After"] = str(lockout.retry_after)
        return response
