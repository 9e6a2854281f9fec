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
    # how many entries of each change it has ({"new": 3, …}), counted while publishing so
    # that lists of releases need not count every entry of every release
    change_counts = models.JSONField(default=dict)

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
    # the revision it points at withdraws the record: the public lists leave it out
    withdrawn = models.BooleanField(default=False)
    # Not a column: the revision the release before published for the record (None if it
    # had none), set on the entries ``public.release_entries`` reads.
    previous_revision: int | None

    class Meta:
        ordering = ["release", "record_kind", "record_key"]
        constraints = [
            models.UniqueConstraint(
                fields=["release", "record_kind", "record_key"], name="release_entry_unique"
            )
        ]
        # The unique constraint's index serves "the entries of release N of kind K by key"
        # (the public lists); this one "the entry of record K/key in the releases ≤ N".
        indexes = [models.Index(fields=["record_kind", "record_key", "release"])]

    def __str__(self) -> str:
        return f"{self.release} {self.record_kind} {self.record_key} {self.change}"


class ReleasedRevision(models.Model):
    """What the public lists filter and order a released revision by, read from its
    snapshot once, when a release first publishes it (docs/releases.md).

    One row per released revision, not per entry: the many releases pointing at an
    unchanged revision share it. Written with the release; never changed.
    """

    revision = models.OneToOneField(
        "claimsdb.Revision", on_delete=models.PROTECT, primary_key=True, related_name="released"
    )
    title = models.TextField(blank=True)  # "" for scope rules
    status = models.CharField(max_length=16)
    kind = models.CharField(max_length=32, blank=True)  # a source's kind
    reliability = models.CharField(max_length=1, blank=True)  # a source's reliability
    case = models.CharField(max_length=100, blank=True)  # the case a scope rule names
    figure = models.CharField(max_length=100, blank=True)  # the figure a scope rule names
    # the texts ``?q=`` searches, casefolded (``claimsdb.release_facets``)
    text = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"released revision {self.revision_id}"


class ReleasedTerm(models.Model):
    """A many-valued fact of a released revision that the public lists filter by:
    ``tag`` (a case's tag), ``related`` (a case its relations name), ``figure`` (a figure
    it owns), ``source`` (a source
    its evidence links cite; ``number``: how many links), ``assessment`` and ``current``
    (``<dimension>=<value>`` of each assessment, ``number`` its position, and of the
    newest one)."""

    revision = models.ForeignKey(
        "claimsdb.Revision",
        on_delete=models.PROTECT,
        related_name="released_terms",
        db_index=False,  # the (revision, name) index serves it
    )
    name = models.CharField(max_length=16)
    value = models.TextField()
    number = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["revision", "name"]),
            models.Index(fields=["name", "value"]),
        ]

    def __str__(self) -> str:
        return f"{self.name}={self.value} of revision {self.revision_id}"
