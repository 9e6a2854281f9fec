from django.db import models

from claimsdb.choices import (
    KEY_MAX_LENGTH,
    AttributionRole,
    CaseStatus,
    ControlKind,
    FigureScope,
    RelationKind,
    UnknownKind,
)


class Case(models.Model):
    """An incident or research demonstration (``claimsdb.case/1``), the owner of its claims."""

    key = models.CharField(max_length=KEY_MAX_LENGTH, unique=True)
    # the key's confusable skeleton (claimsdb/lookalike.py), set when the row is made
    key_skeleton = models.CharField(max_length=200, default="", editable=False, db_index=True)
    title = models.CharField(max_length=500)
    status = models.CharField(max_length=16, choices=CaseStatus.choices, default=CaseStatus.DRAFT)
    summary = models.TextField(blank=True)
    scope_note = models.TextField(blank=True)
    account = models.TextField(blank=True)
    basis = models.TextField(blank=True)
    limits = models.TextField(blank=True)

    class Meta:
        ordering = ["key"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=CaseStatus.values), name="case_status_valid"
            ),
            models.CheckConstraint(condition=~models.Q(key=""), name="case_key_not_empty"),
        ]

    def __str__(self) -> str:
        return self.key


class CaseTag(models.Model):
    """One tag of a case (documents keep tags sorted and unique)."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=100)

    class Meta:
        ordering = ["case", "name"]
        constraints = [models.UniqueConstraint(fields=["case", "name"], name="case_tag_unique")]
        # the case list's choice of tags skips along it (selectors.cases.case_tags)
        indexes = [models.Index(fields=["name"], name="case_tag_name")]

    def __str__(self) -> str:
        return self.name


class Control(models.Model):
    """A mitigation, detection or fix, in the analyst's order."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="controls")
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=ControlKind.choices)
    text = models.TextField()

    class Meta:
        ordering = ["case", "position"]
        constraints = [
            models.UniqueConstraint(fields=["case", "position"], name="control_position_unique")
        ]


class Unknown(models.Model):
    """An unknown, contradiction or open question, in the analyst's order."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="unknowns")
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=UnknownKind.choices)
    text = models.TextField()

    class Meta:
        ordering = ["case", "position"]
        constraints = [
            models.UniqueConstraint(fields=["case", "position"], name="unknown_position_unique")
        ]


class Figure(models.Model):
    """A number that belongs to its case's event (``FIG-…``), with the claims behind it."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="figures")
    figure_id = models.CharField(max_length=80, unique=True)
    # the ID's confusable skeleton (claimsdb/lookalike.py), set when the row is made
    id_skeleton = models.CharField(max_length=200, default="", editable=False, db_index=True)
    position = models.PositiveIntegerField()
    # the number as written (``1.20``, ``155``): see ``claimsdb.records.figures``
    value = models.CharField(max_length=64)
    unit = models.CharField(max_length=100)
    measure = models.CharField(max_length=100)
    scope = models.CharField(max_length=16, choices=FigureScope.choices)
    description = models.TextField(blank=True)
    claims = models.JSONField(default=list)

    class Meta:
        ordering = ["case", "position"]
        constraints = [
            models.UniqueConstraint(fields=["case", "position"], name="figure_position_unique"),
            models.CheckConstraint(
                condition=models.Q(figure_id__startswith="FIG-"), name="figure_id_format"
            ),
            models.CheckConstraint(
                condition=models.Q(scope__in=FigureScope.values), name="figure_scope_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.figure_id


class Attribution(models.Model):
    """A figure of another case used by this case, as impact basis or as context."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="attributions")
    position = models.PositiveIntegerField()
    figure = models.ForeignKey(
        Figure, on_delete=models.PROTECT, to_field="figure_id", related_name="attributions"
    )
    role = models.CharField(max_length=16, choices=AttributionRole.choices)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["case", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["case", "position"], name="attribution_position_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(role__in=AttributionRole.values), name="attribution_role_valid"
            ),
        ]


class Relation(models.Model):
    """A relation between two cases, stored once and shown on both.

    Symmetric kinds (``same_event``, ``related_distinct``) are stored with the smaller key
    as ``case`` and appear in both cases' documents; directed kinds are stored from their
    subject (``case`` is a ``reproduction_of`` ``other``) and appear in its document only.
    """

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="relations_out")
    other = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="relations_in")
    kind = models.CharField(max_length=32, choices=RelationKind.choices)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["case", "other", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["case", "other", "kind"], name="relation_unique"),
            models.CheckConstraint(
                condition=~models.Q(case=models.F("other")), name="relation_not_self"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=RelationKind.values), name="relation_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.case_id} {self.kind} {self.other_id}"
