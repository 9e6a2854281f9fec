from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from claimsdb.models import Release
from claimsdb.services.permissions import ROLES
from claimsdb.services.releases import release_publish

PASSWORD_FILE = Path(settings.BASE_DIR) / "var" / "demo-password"
# The demo's users: one per role, and a second reviewer, so that four eyes can be tried
# (docs/review.md): the seed is loaded by ``reviewer`` and approved by ``reviewer2``.
DEMO_USERS = (*((role, role) for role in ROLES), ("reviewer2", "reviewer"))


class Command(BaseCommand):
    help = (
        "Development only: create the demo users viewer, analyst, reviewer and reviewer2 (one "
        "password, generated once and kept in var/demo-password), load every fixtures/*.json "
        "as reviewer, approved by reviewer2 (four eyes), and, if there is no release yet, "
        "publish the first. Running it again changes nothing."
    )

    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError("setup_demo creates well-known accounts: it runs only with DEBUG=1")
        PASSWORD_FILE.parent.mkdir(parents=True, exist_ok=True)
        if not PASSWORD_FILE.exists():
            PASSWORD_FILE.write_text(secrets.token_urlsafe(12) + "\n", encoding="utf-8")
            PASSWORD_FILE.chmod(0o600)
        password = PASSWORD_FILE.read_text(encoding="utf-8").strip()
        User = get_user_model()
        for username, role in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username)
            if created or not user.check_password(password):
                user.set_password(password)
                user.save()
            user.groups.set([Group.objects.get(name=role)])
        fixtures = sorted((Path(settings.BASE_DIR) / "fixtures").glob("*.json"))
        if fixtures:
            call_command(
                "load_records",
                *[str(f) for f in fixtures],
                user="reviewer",
                approve_as="reviewer2",
                summary="Seed fixtures loaded by setup_demo",
                stdout=self.stdout,
                stderr=self.stderr,
            )
        if fixtures and not Release.objects.exists():
            # so that visitors who are not signed in see the seed too
            release = release_publish(
                user=User.objects.get(username="reviewer"), notes="The seed records"
            )
            self.stdout.write(f"Published release {release.number} of the seed records")
        self.stdout.write(
            f"Demo users: viewer, analyst, reviewer, reviewer2 — password {password} (kept in "
            f"{PASSWORD_FILE})"
        )
