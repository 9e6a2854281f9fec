"""The session store (``SESSION_ENGINE``): Django's database sessions, the same table and
the same rows, with a signed-in request's session read by one statement put together once
per process.

Every signed-in page and API read starts by reading its session, and the ORM took longer to
put ``Session.objects.get(session_key=…, expire_date__gt=now)`` together than the database
took to answer it (bench/README.md, "Reads, one case update and the load"). The statement is
that query's, written from the model's table and columns; where it runs is the router's
choice, as it is for the ORM's (sessions are read on the primary: ``claimsdb.replicas``).
Everything else — saving, expiry, cycling the key on sign-in, ``clearsessions`` — is
Django's.
"""

from __future__ import annotations

import functools

from django.contrib.sessions.backends import db
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import connections, router
from django.utils import timezone


@functools.cache
def _statement(model: type[AbstractBaseSession], alias: str) -> str:
    """The data of the session of a key, unexpired."""
    quote = connections[alias].ops.quote_name
    field = {f.name: quote(f.column) for f in model._meta.concrete_fields}
    return (
        f"SELECT {field['session_data']} "
        f"FROM {quote(model._meta.db_table)} "
        f"WHERE {field['session_key']} = %s AND {field['expire_date']} > %s"
    )


class SessionStore(db.SessionStore):
    def _get_session_from_db(self) -> AbstractBaseSession | None:
        """The unexpired session of this key, or None (and no key: a new one is made when
        the session is saved), as Django's store gives it."""
        model = self.model
        if self.session_key is None:  # no key, or one that is not a session key's shape
            self._session_key = None
            return None
        alias = router.db_for_read(model)
        connection = connections[alias]
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        with connection.cursor() as cursor:
            cursor.execute(_statement(model, alias), [self.session_key, now])
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return model(session_key=self.session_key, session_data=row[0])
