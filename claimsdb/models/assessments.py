from django.db import models

from claimsdb.choices import RecordStatus


class AssessmentMethod(models.Model):
    """A versioned assessment vocabulary (``claimsdb.method/1``).

    ``dimensions`` is the document's list of ``{key, label, values: [{key, label}]}`` and
    ``impact`` its ``{min, max, labels}``; both are kept exactly as the document has them.
    Once an assessment uses a method it is immutable: a change is a new version.
    """

    key = models.CharField(max_length=100, unique=True)
    # the key's confusable skeleton (claimsdb/lookalike.py), set when the row is made
    key_skeleton = models.CharField(max_length=200, default="", editable=False, db_index=True)
    title = models.CharField(max_length=300)
    dimensions = models.JSONField(default=list)
    impact = models.JSONField(default=dict)
    status = models.CharField(
        max_length=16, choices=RecordStatus.choices, default=RecordStatus.ACTIVE
    )

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key

    def dimension_labels(self) -> dict[str, tuple[str, dict[str, str]]]:
        """``{dimension key: (label, {value key: value label})}``."""
        return {
            d["key"]: (d["label"], {v["key"]: v["label"] for v in d["values"]})
            for d in self.dimensions
        }


class Assessment(models.Model):
    """A case's assessment with one method on one date; the newest is current."""

    case = models.ForeignKey("claimsdb.Case", on_delete=models.CASCADE, related_name="assessments")
    position = models.PositiveIntegerField()
    method = models.ForeignKey(AssessmentMethod, on_delete=models.PROTECT, related_name="+")
    assessed_on = models.DateField()
    assessor = models.CharField(max_length=200, blank=True)
    values = models.JSONField(default=dict)
    impact = models.SmallIntegerField(null=True, blank=True)
    impact_ungraded_reason = models.TextField(blank=True)
    narrative = models.TextField(blank=True)
    basis_claims = models.JSONField(default=list)
    basis_sources = models.JSONField(default=list)

    class Meta:
        ordering = ["case", "position"]
        constraints = [
            models.UniqueConstraint(fields=["case", "position"], name="assessment_position_unique"),
            # impact is null exactly when a reason for leaving it ungraded is given
            models.CheckConstraint(
                condition=(models.Q(impact__isnull=True) & ~models.Q(impact_ungraded_reason=""))
                | (models.Q(impact__isnull=False) & models.Q(impact_ungraded_reason="")),
                name="assessment_impact_null_iff_reason",
            ),
            models.CheckConstraint(
                condition=models.Q(impact__isnull=True)
                | (models.Q(impact__gte=0) & models.Q(impact__lte=100)),
                name="assessment_impact_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.case_id} assessment {self.position} ({self.assessed_on})"
