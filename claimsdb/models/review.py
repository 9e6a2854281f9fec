from django.conf import settings
from django.db import models

from claimsdb.choices import RecordKind


class ReviewState(models.Model):
    """Where one record stands in review: its latest revision, its latest approved one and,
    while the two differ, since when and from which revision it has been waiting.

    Not part of the ledger: every column follows from the revisions and the approvals, and
    ``services.review_queue`` keeps it so on the write path (``revisions_written``) and on
    approval (``record_approved``), under the ledger lock. It is there so that the review
    queue is a walk along one index (``waiting_since``, ``id``) of the records that wait,
    however many records and revisions the knowledge base holds (docs/review.md).
    """

    record_kind = models.CharField(max_length=16, choices=RecordKind.choices)
    record_key = models.CharField(max_length=100)
    latest_number = models.PositiveBigIntegerField()
    # the record's latest approved revision; None while none is
    approved_number = models.PositiveBigIntegerField(null=True, blank=True)
    # the first revision after ``approved_number`` and when it was written; None when the
    # latest revision is approved (the record waits for nothing)
    waiting_from = models.PositiveBigIntegerField(null=True, blank=True)
    waiting_since = models.DateTimeField(null=True, blank=True)
    # how many revisions since ``approved_number``, and whether any changed the record
    # materially
    waiting_count = models.PositiveIntegerField(default=0)
    material = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["record_kind", "record_key"], name="review_state_record_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(waiting_from__isnull=True, waiting_since__isnull=True)
                | models.Q(waiting_from__isnull=False, waiting_since__isnull=False),
                name="review_state_waiting_pair",
            ),
        ]
        indexes = [
            # the queue: the records that wait, oldest first
            models.Index(
                fields=["waiting_since", "id"],
                name="review_state_queue",
                condition=models.Q(waiting_since__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.record_kind} {self.record_key} at revision {self.latest_number}"

    @property
    def waiting(self) -> bool:
        return self.waiting_from is not None


class ReviewStateAuthor(models.Model):
    """An author of a revision a record waits to have reviewed (the queue's authors and its
    filter by author)."""

    state = models.ForeignKey(ReviewState, on_delete=models.CASCADE, related_name="authors")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["state", "author"], name="review_state_author_unique")
        ]
        indexes = [models.Index(fields=["author", "state"], name="review_state_by_author")]


class ReviewComment(models.Model):
    """A reviewer's request for a change, anchored to a path of a record at the revision
    they read (``claims[CLM-CP22-004-C].statement``; empty for the whole record).

    Open until a later revision changes what it names (``addressed_in``: a change at the
    path, inside it or around it) or a reviewer resolves it (``resolved_at``); a whole-record
    comment is addressed only by being resolved or by an approval of a later revision
    (docs/review.md, "Requesting changes").
    """

    record_kind = models.CharField(max_length=16, choices=RecordKind.choices)
    record_key = models.CharField(max_length=100)
    revision_number = models.PositiveBigIntegerField()
    path = models.CharField(max_length=500, blank=True)
    text = models.TextField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField()
    # the authors of the revisions the reviewer read: whom the comment is for (their feed)
    addressed_to = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        through="ReviewCommentRecipient",
        related_name="review_comments_for",
        blank=True,
    )
    addressed_in = models.PositiveBigIntegerField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        null=True,
        blank=True,
    )

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=~models.Q(text=""), name="review_comment_text"),
        ]
        indexes = [
            models.Index(
                fields=["record_kind", "record_key", "created_at"],
                name="review_comment_open",
                condition=models.Q(addressed_in__isnull=True, resolved_at__isnull=True),
            ),
            models.Index(fields=["created_at", "id"], name="review_comment_time"),
        ]

    def __str__(self) -> str:
        return f"comment on {self.record_kind} {self.record_key} at {self.path or '(record)'}"

    @property
    def is_open(self) -> bool:
        return self.addressed_in is None and self.resolved_at is None


class ReviewCommentRecipient(models.Model):
    """An author a review comment was addressed to (a model of its own, so that backups,
    which copy every claimsdb table, keep it)."""

    comment = models.ForeignKey(ReviewComment, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["comment", "user"], name="review_recipient_unique")
        ]
        indexes = [models.Index(fields=["user", "comment"], name="review_recipient_by_user")]
