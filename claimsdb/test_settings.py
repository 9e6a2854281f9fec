"""Settings for the test suite: production settings with a throwaway key."""

import os

os.environ.setdefault("SECRET_KEY", "claimsdb-tests-only-" + "x" * 40)
os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")

from .settings import *  # noqa: F403
from .settings import DATABASES

# A misspelt violation code fails the test that makes it (claimsdb/codes.py).
STRICT_VIOLATION_CODES = True

# Fast hashing: the suite creates many users.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Several test runs may share one PostgreSQL server (a developer's runs beside CI's):
# give each run its own test database.
_db = DATABASES["default"]
if _db["ENGINE"].endswith("postgresql") and not _db["TEST"].get("NAME"):
    _db["TEST"]["NAME"] = f"test_{_db['NAME']}_{os.getpid()}"

# Replicas named in the environment are mirrors in tests (Django creates no database for
# them); tests/test_replicas.py attaches a real streaming replica itself.
for _alias in DATABASE_REPLICAS:  # noqa: F405
    DATABASES[_alias]["TEST"] = {"MIRROR": "default"}
