from django.conf import settings
from django.db import models

from claimsdb.choices import RecordKind


class Approval(models.Model):
    """A reviewer's "revision n of this record is reviewed" (docs/review.md).

    Approving revision ``revision_number`` covers every revision of the record after
    ``since_number`` (the record's previous approved revision; None: from its first). The
    approvals form a hash chain of their own, numbered without gaps like the ledger, whose
    head is kept on the ledger head (``LedgerHead.approval_number``/``approval_hash``);
    each link also covers the approved revision's chain hash, so an approval cannot be
    moved to another revision. ``verify_history`` recomputes it.
    """

    number = models.PositiveBigIntegerField(unique=True)
    record_kind = models.CharField(max_length=16, choices=RecordKind.choices)
    record_key = models.CharField(max_length=100)
    revision = models.ForeignKey(
        "claimsdb.Revision", on_delete=models.PROTECT, related_name="approvals"
    )
    revision_number = models.PositiveBigIntegerField()
    since_number = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="the record's previous approved revision, if any"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField()
    note = models.TextField(blank=True)
    # four eyes was off and the range contained the reviewer's own change
    self_approved = models.BooleanField(default=False)
    # the status of the approved revision's document: what releases plan with
    status = models.CharField(max_length=16)
    previous_hash = models.CharField(max_length=64)
    chain_hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["number"]
        indexes = [
            models.Index(
                fields=["record_kind", "record_key", "revision_number"],
                name="approval_record_idx",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="approval_number_positive"
            ),
        ]

    def __str__(self) -> str:
        record = f"{self.record_kind} {self.record_key}"
        return f"approval {self.number} ({record} at revision {self.revision_number})"
