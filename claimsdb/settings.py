"""Settings for claimsdb, read from the environment.

DATABASE_URL  sqlite:///path/to/db.sqlite3 or postgres://user:pass@host:port/name
              (default: an embedded SQLite file under var/)
SECRET_KEY    required when DEBUG is off
DEBUG         "1"/"true" to turn on development mode (default off)
ALLOWED_HOSTS comma-separated host names
SECURE_SSL_REDIRECT, SECURE_COOKIES, SECURE_HSTS_SECONDS
              with DEBUG off: redirect to HTTPS and mark cookies secure (default on)
DATABASE_REPLICA_URLS
              comma-separated PostgreSQL streaming replicas for reads that may be a
              moment old (REPLICA_MAX_LAG_SECONDS, REPLICA_STICKY_SECONDS)
DATABASE_RETRY_AFTER_SECONDS
              the Retry-After of the 503 answered while the database is unreachable (5)
BACKUP_KEY_FILE, BACKUP_KEY
              the keys that sign and verify backups (a file of them, or the keys)
LOG_LEVEL, REQUEST_LOG_LEVEL
              root log level (WARNING) and the per-request access line's (INFO)

docs/operations.md describes running claimsdb as a service.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from claimsdb import limits

BASE_DIR = Path(__file__).resolve().parent.parent


def env_flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def database_from_url(url: str) -> dict:
    """Turn a DATABASE_URL into a Django DATABASES entry (sqlite and postgres only)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    options = dict(parse_qsl(parts.query))
    if scheme == "sqlite":
        # sqlite:///relative/path and sqlite:////absolute/path, as dj-database-url reads them
        path = unquote(parts.path)[1:] if parts.path.startswith("/") else unquote(parts.path)
        name = path or ":memory:"
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name if name == ":memory:" else str(BASE_DIR / name),
            # IMMEDIATE makes each write transaction take the write lock up front, so that
            # concurrent writers queue instead of failing half-way (and so the revision
            # counter is read and bumped under the lock).
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 30},
            "TEST": {"NAME": options.get("test_name") or None},
        }
    if scheme in {"postgres", "postgresql", "pgsql"}:
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "OPTIONS": {k: v for k, v in options.items() if k != "test_name"},
            "TEST": {"NAME": options.get("test_name") or None},
        }
    raise ImproperlyConfigured(
        f"DATABASE_URL: unsupported scheme {scheme!r} (use sqlite or postgres)"
    )


DEBUG = env_flag("DEBUG")
# A violation code missing from claimsdb/codes.py raises (a misspelling fails where it is
# made) instead of being logged; the test settings turn it on.
STRICT_VIOLATION_CODES = DEBUG
# Four eyes (docs/review.md): a reviewer may not approve a range of revisions holding a
# change of their own. A deployment of one person turns it off (CLAIMSDB_FOUR_EYES=0); its
# approvals of its own changes are then recorded, and shown publicly, as self-approved.
FOUR_EYES = env_flag("CLAIMSDB_FOUR_EYES", default=True)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "claimsdb-development-key-not-for-production"

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
if DEBUG and not ALLOWED_HOSTS:
    ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # before django_tasks_db: claimsdb's db_worker (one that survives its database) is the
    # one manage.py runs
    "claimsdb",
    "django_tasks",
    "django_tasks_db",
]

# Background jobs (large imports) on a queue kept in the database itself: run the worker
# with `manage.py db_worker` (docs/operations.md).
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
IMPORT_SPOOL_DIR = os.environ.get("IMPORT_SPOOL_DIR", str(BASE_DIR / "var" / "imports"))
IMPORT_BACKGROUND_BYTES = int(os.environ.get("IMPORT_BACKGROUND_BYTES", str(8 * 1024 * 1024)))
# A running import's job beats this often; one silent for IMPORT_DEAD_SECONDS is dead, and
# the worker queues its import again, up to IMPORT_MAX_ATTEMPTS claims in all.
IMPORT_HEARTBEAT_SECONDS = float(os.environ.get("IMPORT_HEARTBEAT_SECONDS", "10"))
IMPORT_DEAD_SECONDS = float(os.environ.get("IMPORT_DEAD_SECONDS", "120"))
IMPORT_MAX_ATTEMPTS = int(os.environ.get("IMPORT_MAX_ATTEMPTS", "3"))
# The worker's wait before it connects again after losing its database: doubling from the
# first to the last, in seconds.
WORKER_RECONNECT_SECONDS = (0.5, 30.0)

# Webhooks (docs/integrations.md): the worker turns revisions and events into deliveries
# every WEBHOOKS_POLL_SECONDS and sends them; a failed try is tried again after a wait that
# doubles from WEBHOOKS_RETRY_BASE_SECONDS up to WEBHOOKS_RETRY_MAX_SECONDS (with up to a
# tenth of jitter), until WEBHOOKS_RETRY_WINDOW_SECONDS have passed since the first try;
# then the delivery is failed (and can be redelivered). A job holds a delivery for
# WEBHOOKS_LEASE_SECONDS: one whose worker died is sent again once that has passed.
# Receivers at private, loopback or link-local addresses are refused unless
# WEBHOOKS_ALLOW_PRIVATE. WEBHOOKS_SITE_URL makes the links in payloads absolute.
WEBHOOKS_ALLOW_PRIVATE = env_flag("WEBHOOKS_ALLOW_PRIVATE")
WEBHOOKS_SITE_URL = os.environ.get("WEBHOOKS_SITE_URL", "").rstrip("/")
WEBHOOKS_TIMEOUT_SECONDS = float(os.environ.get("WEBHOOKS_TIMEOUT_SECONDS", "10"))
WEBHOOKS_POLL_SECONDS = float(os.environ.get("WEBHOOKS_POLL_SECONDS", "1"))
WEBHOOKS_RETRY_BASE_SECONDS = float(os.environ.get("WEBHOOKS_RETRY_BASE_SECONDS", "5"))
WEBHOOKS_RETRY_MAX_SECONDS = float(os.environ.get("WEBHOOKS_RETRY_MAX_SECONDS", "3600"))
WEBHOOKS_RETRY_WINDOW_SECONDS = float(
    os.environ.get("WEBHOOKS_RETRY_WINDOW_SECONDS", str(3 * 24 * 3600))
)
WEBHOOKS_LEASE_SECONDS = float(os.environ.get("WEBHOOKS_LEASE_SECONDS", "120"))

# The key that signs backups and the older ones that still verify them (docs/operations.md,
# "The backup key"): a file of keys, one a line, the signing key first; or the keys
# themselves. Never kept with the backups.
BACKUP_KEY_FILE = os.environ.get("BACKUP_KEY_FILE", "")
BACKUP_KEY = os.environ.get("BACKUP_KEY", "")
# A file to which each write appends its time and the time it held the ledger lock
# (docs/write-path.md, "Measuring the critical section"); empty: nothing is logged.
WRITE_TIMING_LOG = os.environ.get("CLAIMSDB_WRITE_TIMING", "")
# Where the JSON Schema of claimsdb's STIX extension is published: the extension definition
# of every STIX export names it (docs/exports.md). Every instance serves it at
# /api/v1/stix/extension-schema.json; set this to that address on the public host. It is
# part of the exported bytes, so every instance exporting one release alike names one URL.
STIX_EXTENSION_SCHEMA_URL = os.environ.get(
    "STIX_EXTENSION_SCHEMA_URL", "http://127.0.0.1:8000/api/v1/stix/extension-schema.json"
)

# Mail (docs/review.md, "Your review feed"): requested changes reach their authors. SMTP
# when EMAIL_HOST is set; otherwise printed on the console in development and not sent in
# production (the comments are in the authors' feeds either way).
if os.environ.get("EMAIL_HOST"):
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = os.environ["EMAIL_HOST"]
    EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "587"))
    EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_flag("EMAIL_USE_TLS", default=True)
    EMAIL_TIMEOUT = 10
elif DEBUG:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
else:
    EMAIL_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "claimsdb@localhost")

MIDDLEWARE = [
    # probes first: no login, no HTTPS redirect, no host check (docs/operations.md)
    "claimsdb.web.health.HealthCheckMiddleware",
    "claimsdb.web.requestlog.RequestLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "claimsdb.web.request_limits.RequestSizeLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "claimsdb.web.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "claimsdb.replicas.ReplicaReadMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "claimsdb.urls"
WSGI_APPLICATION = "claimsdb.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
    {
        # the rows of the longest lists (claimsdb/web/rows.py)
        "NAME": "rows",
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "templates" / "rows"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "claimsdb.web.rows.environment"},
    },
]

DATABASES = {
    "default": database_from_url(
        os.environ.get("DATABASE_URL") or f"sqlite:///{(BASE_DIR / 'var' / 'claimsdb.sqlite3')}"
    )
}
if (
    DATABASES["default"]["ENGINE"].endswith("sqlite3")
    and DATABASES["default"]["NAME"] != ":memory:"
):
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)

# Read replicas (claimsdb/replicas.py decides which reads may use them).
DATABASE_REPLICAS = []
for _number, _url in enumerate(
    [u.strip() for u in os.environ.get("DATABASE_REPLICA_URLS", "").split(",") if u.strip()],
    start=1,
):
    _replica = database_from_url(_url)
    if not (
        _replica["ENGINE"].endswith("postgresql")
        and DATABASES["default"]["ENGINE"].endswith("postgresql")
    ):
        raise ImproperlyConfigured("DATABASE_REPLICA_URLS: replicas need PostgreSQL throughout")
    DATABASES[f"replica{_number}"] = _replica
    DATABASE_REPLICAS.append(f"replica{_number}")
DATABASE_ROUTERS = ["claimsdb.replicas.ReplicaRouter"] if DATABASE_REPLICAS else []
REPLICA_MAX_LAG_SECONDS = float(os.environ.get("REPLICA_MAX_LAG_SECONDS", "5"))
REPLICA_STICKY_SECONDS = int(os.environ.get("REPLICA_STICKY_SECONDS", "10"))
REPLICA_CHECK_SECONDS = float(os.environ.get("REPLICA_CHECK_SECONDS", "1"))
# While the database cannot be reached, requests get 503 with this Retry-After
# (claimsdb/unavailable.py).
DATABASE_RETRY_AFTER_SECONDS = int(os.environ.get("DATABASE_RETRY_AFTER_SECONDS", "5"))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise expects it, before collectstatic
STATICFILES_DIRS = [BASE_DIR / "claimsdb" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Password guessing (claimsdb/signin.py, docs/limits.md): failed sign-ins lock an account
# from one address after a few, everywhere after more, for a while; the page, the admin and
# the API token endpoint alike.
AUTHENTICATION_BACKENDS = ["claimsdb.signin.ThrottledModelBackend"]
# The failure counters live in the cache, which every worker process must share: the
# database's own cache table (made by migration 0009), so nothing else needs to run.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "claimsdb_cache",
    }
}
SIGNIN_FAILURES_PER_ACCOUNT_AND_ADDRESS = int(os.environ.get("SIGNIN_FAILURES_PER_ADDRESS", "5"))
SIGNIN_FAILURES_PER_ACCOUNT = int(os.environ.get("SIGNIN_FAILURES_PER_ACCOUNT", "20"))
SIGNIN_LOCKOUT_SECONDS = int(os.environ.get("SIGNIN_LOCKOUT_SECONDS", "900"))

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# Uploaded results files larger than this go to a temporary file and are streamed.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# The largest request body read into memory: one record document (docs/limits.md). Larger
# ones are refused (the API answers 413, request.too_large).
DATA_UPLOAD_MAX_MEMORY_SIZE = limits.DOCUMENT_MAX_BYTES

# Security headers; check --deploy is clean with DEBUG off.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions, read by a statement put together once (claimsdb/sessions.py).
SESSION_ENGINE = "claimsdb.sessions"
CSRF_COOKIE_HTTPONLY = False
if not DEBUG:
    SECURE_SSL_REDIRECT = env_flag("SECURE_SSL_REDIRECT", default=True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # Off only to try the production server over plain HTTP on one's own machine.
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_flag("SECURE_COOKIES", default=True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": [
        "claimsdb.api.rest.CanonicalJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": [
        "claimsdb.api.rest.DocumentJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "claimsdb.api.rest.Pagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "claimsdb.api.errors.exception_handler",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "claimsdb API",
    "DESCRIPTION": (
        "Records, claims, revisions and imports of the claimsdb knowledge base. "
        "Without credentials (or without a role) reads return the released record: the "
        "revisions the latest release publishes. Signed-in users with a role read the working "
        "state. Authenticate with `Authorization: Token <token>` (from "
        "`POST /api/v1/auth/token/`). "
        "A record's ETag is its latest revision number; writes take `?summary=` and "
        "`?material=` and honour `If-Match`. Every error has the `Error` shape."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PUBLIC": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # no call-outs: Swagger UI would otherwise send the schema to validator.swagger.io
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "claimsdb.api.openapi.add_components",
        "claimsdb.api.schema_rules.describe_parameters",
    ],
}

# Logs go to stdout (the process manager or container runtime collects them): one line
# per request from claimsdb.request, errors with their traceback from django.request, each
# stamped with the request id.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "claimsdb.web.requestlog.RequestIdFilter"}},
    "formatters": {
        "line": {
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        }
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "filters": ["request_id"],
            "formatter": "line",
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    "loggers": {
        "claimsdb.request": {
            "handlers": ["console"],
            "level": os.environ.get("REQUEST_LOG_LEVEL", "INFO"),
            "propagate": False,
        },
    },
}
