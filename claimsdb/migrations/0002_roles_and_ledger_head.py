from django.db import migrations

ROLES = ("viewer", "analyst", "reviewer")


def create_roles_and_head(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in ROLES:
        Group.objects.get_or_create(name=name)
    LedgerHead = apps.get_model("claimsdb", "LedgerHead")
    LedgerHead.objects.get_or_create(pk=1)


def remove_roles(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("claimsdb", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]

    operations = [migrations.RunPython(create_roles_and_head, remove_roles)]
