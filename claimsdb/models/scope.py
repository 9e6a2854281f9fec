from django.db import models

from claimsdb.choices import KEY_MAX_LENGTH, RecordStatus, RuleKind


class ScopeRule(models.Model):
    """A scoping rule (``claimsdb.rule/1``): e.g. figure X must never be attributed to case Y.

    ``figure`` and ``case`` hold keys rather than foreign keys so a rule can be loaded,
    withdrawn and restored independently of the rows it names; the services check that
    they exist.
    """

    key = models.CharField(max_length=KEY_MAX_LENGTH, unique=True)
    # the key's confusable skeleton (claimsdb/lookalike.py), set when the row is made
    key_skeleton = models.CharField(max_length=200, default="", editable=False, db_index=True)
    kind = models.CharField(max_length=32, choices=RuleKind.choices)
    status = models.CharField(
        max_length=16, choices=RecordStatus.choices, default=RecordStatus.ACTIVE
    )
    figure = models.CharField(max_length=80)
    case = models.CharField(max_length=KEY_MAX_LENGTH)
    reason = models.TextField()

    class Meta:
        ordering = ["key"]
        # the scope check of a write looks rules up by the case and the figure they name
        indexes = [
            models.Index(fields=["case"], name="scoperule_case_idx"),
            models.Index(fields=["figure"], name="scoperule_figure_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(key__startswith="RULE-"), name="rule_key_format"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=RuleKind.values), name="rule_kind_valid"
            ),
            models.CheckConstraint(condition=~models.Q(reason=""), name="rule_reason_required"),
        ]

    def __str__(self) -> str:
        return self.key
