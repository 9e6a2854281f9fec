"""An index on case tag names, so that the case list's choice of tags is read by skipping
from one name to the next (``selectors.case_tags``) rather than by reading every tag."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("claimsdb", "0010_revision_changes")]

    operations = [
        migrations.AddIndex(
            model_name="casetag",
            index=models.Index(fields=["name"], name="case_tag_name"),
        ),
    ]
