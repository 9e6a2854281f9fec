from django.conf import settings
from django.db import models

from claimsdb.choices import RecordKind, RevisionAction


class LedgerHead(models.Model):
    """The single row that serializes revision numbering: locked by every writer."""

    number = models.PositiveBigIntegerField(default=0)
    chain_hash = models.CharField(max_length=64, default="0" * 64)
    # the head of the approvals' own chain (models.approvals.Approval): an approval is
    # written under this same lock, so it is checked against the record's latest revision
    approval_number = models.PositiveBigIntegerField(default=0)
    approval_hash = models.CharField(max_length=64, default="0" * 64)

    def __str__(self) -> str:
        return f"ledger head at revision {self.number}"


class Revision(models.Model):
    """One change to one record: gapless global number, canonical snapshot, chained hash."""

    number = models.PositiveBigIntegerField(unique=True)
    record_kind = models.CharField(max_length=16, choices=RecordKind.choices)
    record_key = models.CharField(max_length=100)
    action = models.CharField(max_length=16, choices=RevisionAction.choices)
    material = models.BooleanField()
    summary = models.TextField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField()
    snapshot = models.TextField(help_text="canonical compact JSON of the record after the change")
    snapshot_sha256 = models.CharField(max_length=64)
    previous_hash = models.CharField(max_length=64)
    chain_hash = models.CharField(max_length=64, unique=True)
    # Read from the snapshots, for the history pages (docs/architecture.md, "The ledger");
    # not hashed: both follow from the chain's snapshots.
    changed = models.JSONField(
        default=list,
        help_text="the fields changed since the record's previous revision "
        "(records.changed_fields); empty for its first",
    )
    dated_on = models.DateField(
        null=True,
        blank=True,
        help_text="the date the document gives its own record (records.record_date), for a "
        "revision that brought the document in: a creation or a bundle load",
    )

    class Meta:
        ordering = ["number"]
        indexes = [models.Index(fields=["record_kind", "record_key", "number"])]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(summary=""), name="revision_summary_required"
            ),
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="revision_number_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"revision {self.number} ({self.record_kind} {self.record_key})"


class WriteFootprint(models.Model):
    """A record that a committed write changed or whose checks it depended on.

    A write that checks its change before taking the ledger lock validates, under the lock,
    that no write committed since it began has a footprint among the records it read
    (docs/write-path.md, "The critical section"). ``number`` is the last revision number of
    the write that left the footprint. Footprints older than the window a write may take
    are deleted (``services.footprints``); they are not part of the ledger.
    """

    number = models.PositiveBigIntegerField()
    record_kind = models.CharField(max_length=16, choices=RecordKind.choices)
    record_key = models.CharField(max_length=100)

    class Meta:
        # validation asks for the footprints of the few writes committed after a number
        indexes = [models.Index(fields=["number"], name="writefootprint_number_idx")]

    def __str__(self) -> str:
        return f"{self.record_kind} {self.record_key} at revision {self.number}"
