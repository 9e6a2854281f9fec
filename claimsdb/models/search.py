"""The search index: the searchable text of cases, claims, sources and components, kept twice — as
signed-in users see it (the working state) and as the public sees it (the released
revisions). See docs/search.md."""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import F, Func

from claimsdb.choices import ID_MAX_LENGTH

# The text-search configuration of the stored vectors and of every query against them.
SEARCH_CONFIG = "english"


class SearchScope(models.TextChoices):
    WORKING = "working", "working state"
    RELEASED = "released", "released"


class SearchKind(models.TextChoices):
    """What a search entry finds. Alphabetical order is the order results list them in."""

    CASE = "case", "case"
    CLAIM = "claim", "claim"
    COMPONENT = "component", "component"
    SOURCE = "source", "source"


# ``more`` holds the further text of an entry as segments in a fixed order per kind,
# separated by this character (which the text-search parser takes as a space).
MORE_SEPARATOR = "\x1f"
MORE_FIELDS = {
    "case": ("tags", "figure IDs", "full account", "basis"),
    "claim": (),
    "source": ("publisher", "key"),
    "component": ("aliases", "Package URL", "key"),
}


class SearchDocument(Func):
    """The stored ``tsvector`` of an entry: its title weighted A, its text weighted B, the
    rest of it (``more``) weighted C.

    PostgreSQL only: elsewhere the column holds NULL and search matches words in the text
    columns instead. The configuration is a constant so the expression is immutable, as a
    stored generated column requires.
    """

    output_field = SearchVectorField()

    def __init__(self) -> None:
        super().__init__(F("title"), F("text"), F("more"))

    def as_sql(self, compiler, connection, **extra):
        return "NULL", []

    def as_postgresql(self, compiler, connection, **extra):
        (title, title_params), (text, text_params), (more, more_params) = (
            compiler.compile(expression) for expression in self.get_source_expressions()
        )
        config = f"'{SEARCH_CONFIG}'::regconfig"
        sql = (
            f"setweight(to_tsvector({config}, COALESCE({title}, '')), 'A') || "
            f"setweight(to_tsvector({config}, COALESCE({text}, '')), 'B') || "
            f"setweight(to_tsvector({config}, COALESCE({more}, '')), 'C')"
        )
        return sql, [*title_params, *text_params, *more_params]


class SearchEntry(models.Model):
    """One searchable case, claim or source in one scope.

    Written only by ``claimsdb.services.search_index``: working entries in the transaction
    of the write that changes the record, released entries when a release publishes it.
    A case's entry and its claims' entries share ``case_key``, so a case is re-indexed by
    replacing the entries of that key.
    """

    scope = models.CharField(max_length=8, choices=SearchScope.choices)
    kind = models.CharField(max_length=16, choices=SearchKind.choices)
    key = models.CharField(max_length=ID_MAX_LENGTH)  # case key, claim ID, source or component key
    case_key = models.CharField(max_length=ID_MAX_LENGTH, blank=True)  # "" for sources
    status = models.CharField(max_length=32)  # the record's or the claim's status
    source_kind = models.CharField(max_length=32, blank=True)  # or a component's kind
    title = models.TextField(blank=True)  # case and source titles, component names
    text = models.TextField(blank=True)  # case summaries and claim statements
    # cases: tags, figure IDs, account, basis; sources: publisher, key (``MORE_FIELDS``)
    more = models.TextField(blank=True, default="")
    revision = models.PositiveBigIntegerField(null=True, blank=True)  # released entries
    vector = models.GeneratedField(
        expression=SearchDocument(), output_field=SearchVectorField(), db_persist=True
    )

    class Meta:
        ordering = ["scope", "kind", "key"]
        constraints = [
            # (scope, key) first: an exact key or claim ID query looks the key up directly
            models.UniqueConstraint(fields=["scope", "key", "kind"], name="search_entry_unique"),
            models.CheckConstraint(
                condition=models.Q(scope__in=SearchScope.values), name="search_scope_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=SearchKind.values), name="search_kind_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["scope", "case_key"], name="search_entry_case"),
            # PostgreSQL only (created by the migration there, nowhere else): one GIN index
            # per scope, so a query of one scope reads only its own postings
            GinIndex(
                fields=["vector"],
                condition=models.Q(scope=SearchScope.WORKING),
                name="search_vector_working",
            ),
            GinIndex(
                fields=["vector"],
                condition=models.Q(scope=SearchScope.RELEASED),
                name="search_vector_released",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.kind} {self.key}"
