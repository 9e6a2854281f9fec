"""``manage.py create_database``: create the PostgreSQL database DATABASE_URL names.

``make serve`` runs it before ``migrate`` so that a new server needs nothing but a reachable
PostgreSQL and a role allowed to create databases. It does nothing on SQLite (the file is
created on first use) or when the database exists.
"""

from __future__ import annotations

import psycopg
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from psycopg import sql


class Command(BaseCommand):
    help = "Create the PostgreSQL database named by DATABASE_URL if it does not exist."

    def handle(self, *args, **options):
        config = settings.DATABASES["default"]
        if not config["ENGINE"].endswith("postgresql"):
            self.stdout.write("SQLite: nothing to create")
            return
        name = config["NAME"]
        params = {
            "dbname": "postgres",
            "user": config.get("USER") or None,
            "password": config.get("PASSWORD") or None,
            "host": config.get("HOST") or None,
            "port": config.get("PORT") or None,
        }
        try:
            with psycopg.connect(
                **{k: v for k, v in params.items() if v}, autocommit=True
            ) as connection:
                exists = connection.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", [name]
                ).fetchone()
                if exists:
                    self.stdout.write(f"database {name} exists")
                    return
                connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.Error as exc:
            raise CommandError(f"cannot create database {name}: {exc}") from exc
        self.stdout.write(f"created database {name}")
