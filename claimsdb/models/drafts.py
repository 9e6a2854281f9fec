from django.conf import settings
from django.db import models


class FormDraft(models.Model):
    """An editing form's input kept for its user (``claimsdb/web/stash.py``) while they
    create a record the form needs, until the form is saved or the draft discarded. Not a
    record: no revision, never released; bounded per user and expiring."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    token = models.CharField(max_length=64, unique=True)
    path = models.CharField(max_length=1000)  # the form's page
    data = models.JSONField()  # field name → submitted values
    extra = models.JSONField(default=dict)  # what happened meanwhile (the row, a new key)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["user", "path", "updated_at"], name="form_draft_user_path"),
            models.Index(fields=["user", "updated_at"], name="form_draft_user"),
        ]
