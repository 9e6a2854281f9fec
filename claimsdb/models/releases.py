from django.conf import settings
from django.db import models

from claimsdb.choices import RecordKind


class ReleaseChange(models.TextChoices):
    NEW = "new", "new"
    UPDATED = "updated", "updated"
    WITHDRAWN = "withdrawn", "withdrawn"
    UNCHANGED = "unchanged", "unchanged"


class Release(models.Model):
    """A published snapshot of the knowledge base: never changes once written."""

    number = models.PositiveIntegerField(unique=True)
    published_at = models.DateTimeField()
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    notes = models.TextField()
    # the ledger's head when the release was taken
    last_revision = models.PositiveBigIntegerField()

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="release_number_positive"
            )
        ]

    def __str__(self) -> str:
        return f"release {self.number}"


class ReleaseEntry(models.Model):
    """One record in a release: the revision the public sees, and how it changed."""

    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="entries")
    record_kind = models.CharField(max_length=16, choices=RecordKind.choices)
    record_key = models.CharField(max_length=100)
    revision = models.ForeignKey(
        "claimsdb.Revision", on_delete=models.PROTECT, related_name="release_entries"
    )
    change = models.CharField(max_length=16, choices=ReleaseChange.choices)

    class Meta:
        ordering = ["release", "record_kind", "record_key"]
        constraints = [
            models.UniqueConstraint(
                fields=["release", "record_kind", "record_key"], name="release_entry_unique"
            )
        ]
        indexes = [models.Index(fields=["record_kind", "record_key", "release"])]

    def __str__(self) -> str:
        return f"{self.release} {self.record_kind} {self.record_key} {self.change}"
