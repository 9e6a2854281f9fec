"""Settings for the test suite: production settings with a throwaway key."""

import os

os.environ.setdefault("SECRET_KEY", "claimsdb-tests-only-" + "x" * 40)
os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost,127.0.0.1")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")

from .settings import *  # noqa: E402,F403

# Fast hashing: the suite creates many users.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Several test runs may share one PostgreSQL server (a developer's runs beside CI's):
# give each run its own test database.
if DATABASES["default"]["ENGINE"].endswith("postgresql") and not DATABASES["default"]["TEST"].get(
    "NAME"
):
    DATABASES["default"]["TEST"]["NAME"] = f"test_{DATABASES['default']['NAME']}_{os.getpid()}"
