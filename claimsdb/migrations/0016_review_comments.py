"""The review queue's state per record and reviewers' comments (docs/review.md).

The state of every record is computed from the ledger: a record waits from its first
revision after its latest approved one. Approved here means what the approvals say; a
ledger without approvals yet counts each record's latest released revision as approved,
as the upgrade to approvals does.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def approved_numbers(apps):
    """Each record's latest approved revision: from the approvals when the table exists and
    holds any, else from the releases."""
    try:
        approval = apps.get_model("claimsdb", "Approval")
    except LookupError:
        approval = None
    approved = {}
    if approval is not None and approval._default_manager.exists():
        rows = approval._default_manager.values_list("record_kind", "record_key", "revision_number")
    else:
        entry = apps.get_model("claimsdb", "ReleaseEntry")
        rows = entry._default_manager.values_list("record_kind", "record_key", "revision__number")
    for kind, key, number in rows.iterator(chunk_size=5000):
        record = (kind, key)
        if number > approved.get(record, 0):
            approved[record] = number
    return approved


def fill_states(apps, schema_editor):
    revision = apps.get_model("claimsdb", "Revision")
    state_model = apps.get_model("claimsdb", "ReviewState")
    author_model = apps.get_model("claimsdb", "ReviewStateAuthor")
    approved = approved_numbers(apps)
    states, authors = {}, {}
    rows = revision._default_manager.order_by("number").values_list(
        "record_kind", "record_key", "number", "created_at", "material", "author_id"
    )
    for kind, key, number, created_at, material, author in rows.iterator(chunk_size=5000):
        record = (kind, key)
        state = states.get(record)
        if state is None:
            state = states[record] = state_model(
                record_kind=kind, record_key=key, approved_number=approved.get(record)
            )
        state.latest_number = number
        if state.approved_number is not None and number <= state.approved_number:
            continue
        if state.waiting_from is None:
            state.waiting_from, state.waiting_since = number, created_at
        state.waiting_count += 1
        state.material = state.material or material
        authors.setdefault(record, set()).add(author)
    state_model._default_manager.bulk_create(list(states.values()), batch_size=1000)
    ids = {
        (kind, key): pk
        for pk, kind, key in state_model._default_manager.values_list(
            "pk", "record_kind", "record_key"
        )
    }
    author_model._default_manager.bulk_create(
        [
            author_model(state_id=ids[record], author_id=author)
            for record, ids_of_authors in authors.items()
            for author in ids_of_authors
        ],
        batch_size=1000,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("claimsdb", "0015_approvals"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ReviewComment",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "record_kind",
                    models.CharField(
                        choices=[
                            ("case", "case"),
                            ("source", "source"),
                            ("rule", "scope rule"),
                            ("method", "assessment method"),
                        ],
                        max_length=16,
                    ),
                ),
                ("record_key", models.CharField(max_length=100)),
                ("revision_number", models.PositiveBigIntegerField()),
                ("path", models.CharField(blank=True, max_length=500)),
                ("text", models.TextField()),
                ("created_at", models.DateTimeField()),
                ("addressed_in", models.PositiveBigIntegerField(blank=True, null=True)),
                ("resolved_at", models.DateTimeField(blank=True, null=True)),
                (
                    "author",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "resolved_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["created_at", "id"],
            },
        ),
        migrations.CreateModel(
            name="ReviewCommentRecipient",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "comment",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, to="claimsdb.reviewcomment"
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="reviewcomment",
            name="addressed_to",
            field=models.ManyToManyField(
                blank=True,
                related_name="review_comments_for",
                through="claimsdb.ReviewCommentRecipient",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.CreateModel(
            name="ReviewState",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "record_kind",
                    models.CharField(
                        choices=[
                            ("case", "case"),
                            ("source", "source"),
                            ("rule", "scope rule"),
                            ("method", "assessment method"),
                        ],
                        max_length=16,
                    ),
                ),
                ("record_key", models.CharField(max_length=100)),
                ("latest_number", models.PositiveBigIntegerField()),
                ("approved_number", models.PositiveBigIntegerField(blank=True, null=True)),
                ("waiting_from", models.PositiveBigIntegerField(blank=True, null=True)),
                ("waiting_since", models.DateTimeField(blank=True, null=True)),
                ("waiting_count", models.PositiveIntegerField(default=0)),
                ("material", models.BooleanField(default=False)),
            ],
            options={
                "indexes": [
                    models.Index(
                        condition=models.Q(("waiting_since__isnull", False)),
                        fields=["waiting_since", "id"],
                        name="review_state_queue",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("record_kind", "record_key"), name="review_state_record_unique"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(
                                ("waiting_from__isnull", True), ("waiting_since__isnull", True)
                            ),
                            models.Q(
                                ("waiting_from__isnull", False), ("waiting_since__isnull", False)
                            ),
                            _connector="OR",
                        ),
                        name="review_state_waiting_pair",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="ReviewStateAuthor",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "author",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "state",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="authors",
                        to="claimsdb.reviewstate",
                    ),
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="reviewcommentrecipient",
            index=models.Index(fields=["user", "comment"], name="review_recipient_by_user"),
        ),
        migrations.AddConstraint(
            model_name="reviewcommentrecipient",
            constraint=models.UniqueConstraint(
                fields=("comment", "user"), name="review_recipient_unique"
            ),
        ),
        migrations.AddIndex(
            model_name="reviewcomment",
            index=models.Index(
                condition=models.Q(("addressed_in__isnull", True), ("resolved_at__isnull", True)),
                fields=["record_kind", "record_key", "created_at"],
                name="review_comment_open",
            ),
        ),
        migrations.AddIndex(
            model_name="reviewcomment",
            index=models.Index(fields=["created_at", "id"], name="review_comment_time"),
        ),
        migrations.AddConstraint(
            model_name="reviewcomment",
            constraint=models.CheckConstraint(
                condition=models.Q(("text", ""), _negated=True), name="review_comment_text"
            ),
        ),
        migrations.AddIndex(
            model_name="reviewstateauthor",
            index=models.Index(fields=["author", "state"], name="review_state_by_author"),
        ),
        migrations.AddConstraint(
            model_name="reviewstateauthor",
            constraint=models.UniqueConstraint(
                fields=("state", "author"), name="review_state_author_unique"
            ),
        ),
        migrations.RunPython(fill_states, migrations.RunPython.noop),
    ]
