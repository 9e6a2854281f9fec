from django.db import models

from claimsdb.choices import KEY_MAX_LENGTH, AffectedStatus, ComponentKind, RecordStatus

from .cases import Case


class Component(models.Model):
    """The software, model, service or hardware cases are about (``claimsdb.component/1``)."""

    key = models.CharField(max_length=KEY_MAX_LENGTH, unique=True)
    # the key's confusable skeleton (claimsdb/lookalike.py), set when the row is made
    key_skeleton = models.CharField(max_length=200, default="", editable=False, db_index=True)
    name = models.CharField(max_length=300)
    kind = models.CharField(max_length=32, choices=ComponentKind.choices)
    purl = models.CharField(max_length=1000, blank=True)
    # a univers scheme name (claimsdb/versions.py): how its versions are ordered
    version_scheme = models.CharField(max_length=32)
    homepage = models.CharField(max_length=2000, blank=True)
    # the names other tools use for it, as the document lists them
    aliases = models.JSONField(default=list)
    # ``same_component`` relations this record states ({component, kind, note}), in order
    relations = models.JSONField(default=list)
    status = models.CharField(
        max_length=16, choices=RecordStatus.choices, default=RecordStatus.ACTIVE
    )

    class Meta:
        ordering = ["key"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(key__startswith="CMP-"), name="component_key_format"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=ComponentKind.values), name="component_kind_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=RecordStatus.values),
                name="component_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.name}"


def fold_name(name: str) -> str:
    """A name as ``ComponentName`` keeps it and lookups compare it: case-folded, its spaces
    collapsed (``Mooncake`` and ``mooncake`` are one name)."""
    return " ".join(name.casefold().split())[:300]


class ComponentName(models.Model):
    """A component's name or one of its aliases, case-folded: what finds a component by a
    name another tool writes (the importer's ``mooncake``), along an index. Kept by the
    write path from the document; not part of it."""

    component = models.ForeignKey(Component, on_delete=models.CASCADE, related_name="names")
    name = models.CharField(max_length=300)

    class Meta:
        ordering = ["name", "component"]
        constraints = [
            models.UniqueConstraint(fields=["component", "name"], name="component_name_unique")
        ]
        indexes = [models.Index(fields=["name"], name="component_name_lookup")]


class AffectedEntry(models.Model):
    """One entry of a case's ``affected`` list: what the case says of a component's
    versions, and the claims of the case that say it."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="affected")
    position = models.PositiveIntegerField()
    component = models.ForeignKey(
        Component, on_delete=models.PROTECT, related_name="affected_entries"
    )
    status = models.CharField(max_length=32, choices=AffectedStatus.choices)
    # OSV's event form, in the component's version scheme: [{"events": [{"introduced": …}]}]
    ranges = models.JSONField(default=list)
    versions = models.JSONField(default=list)
    claims = models.JSONField(default=list)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["case", "position"]
        constraints = [
            models.UniqueConstraint(fields=["case", "position"], name="affected_position_unique"),
            models.CheckConstraint(
                condition=models.Q(status__in=AffectedStatus.values),
                name="affected_status_valid",
            ),
        ]
        # a component's cases, and the case list filtered by component and status
        indexes = [models.Index(fields=["component", "status", "case"], name="affected_component")]
