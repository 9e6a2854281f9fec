from django.db import models

from claimsdb.choices import KEY_MAX_LENGTH, RecordStatus, Reliability, SourceKind


class Source(models.Model):
    """An evidence source (``claimsdb.source/1``): a disclosure, report, advisory, thread…"""

    key = models.CharField(max_length=KEY_MAX_LENGTH, unique=True)
    # the key's confusable skeleton (claimsdb/lookalike.py), set when the row is made
    key_skeleton = models.CharField(max_length=200, default="", editable=False, db_index=True)
    title = models.CharField(max_length=500)
    kind = models.CharField(max_length=32, choices=SourceKind.choices)
    publisher = models.CharField(max_length=300, blank=True)
    url = models.CharField(max_length=2000, blank=True)
    published_on = models.DateField(null=True, blank=True)
    accessed_on = models.DateField(null=True, blank=True)
    reliability = models.CharField(max_length=1, choices=Reliability.choices, blank=True)
    notes = models.TextField(blank=True)
    status = models.CharField(
        max_length=16, choices=RecordStatus.choices, default=RecordStatus.ACTIVE
    )

    class Meta:
        ordering = ["key"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(key__startswith="SRC-"),
                name="source_key_format",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=SourceKind.values), name="source_kind_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(reliability__in=Reliability.values),
                name="source_reliability_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.title}"
