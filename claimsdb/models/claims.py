from django.db import models

from claimsdb.choices import ClaimBasis, ClaimOrigin, ClaimStatus, EvidenceRelation


class Claim(models.Model):
    """A claim with a permanent ID, unique across the knowledge base."""

    case = models.ForeignKey("claimsdb.Case", on_delete=models.CASCADE, related_name="claims")
    claim_id = models.CharField(max_length=80, unique=True)
    position = models.PositiveIntegerField()
    statement = models.TextField()
    status = models.CharField(max_length=32, choices=ClaimStatus.choices)
    status_note = models.TextField(blank=True)
    basis = models.CharField(max_length=32, choices=ClaimBasis.choices)
    origin = models.CharField(max_length=16, choices=ClaimOrigin.choices, default="human")

    class Meta:
        ordering = ["case", "position"]
        constraints = [
            models.UniqueConstraint(fields=["case", "position"], name="claim_position_unique"),
            models.CheckConstraint(
                condition=models.Q(claim_id__startswith="CLM-"), name="claim_id_format"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=ClaimStatus.values), name="claim_status_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(basis__in=ClaimBasis.values), name="claim_basis_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.claim_id


class ClaimIdReservation(models.Model):
    """Every claim ID ever used, with the case that used it: IDs are never reused.

    A row is written when a claim is first created and is never deleted, so an ID stays
    taken after its claim is withdrawn or removed from the case.
    """

    claim_id = models.CharField(max_length=80, unique=True)
    case_key = models.CharField(max_length=40)
    reserved_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.claim_id} ({self.case_key})"


class EvidenceLink(models.Model):
    """Claim → source, with a relation and a locator naming the part of the source."""

    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="evidence")
    position = models.PositiveIntegerField()
    source = models.ForeignKey("claimsdb.Source", on_delete=models.PROTECT, related_name="links")
    relation = models.CharField(max_length=16, choices=EvidenceRelation.choices)
    locator = models.TextField(blank=True)

    class Meta:
        ordering = ["claim", "position"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "position"], name="evidence_position_unique"),
            models.CheckConstraint(
                condition=models.Q(relation__in=EvidenceRelation.values),
                name="evidence_relation_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.claim_id} {self.relation} {self.source_id}"
