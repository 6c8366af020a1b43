"""Django settings for tierlab, read from environment variables.

Defaults start everything on a fresh machine with no servers: SQLite under ``var/`` and
Celery's filesystem broker under ``var/broker/``. Set ``DATABASE_URL`` (PostgreSQL) and
``CELERY_BROKER_URL`` (Redis) for the production-shaped stack.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from tierlab.env import env_bool, env_choice, env_float, env_int, env_list, env_rate, env_required, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("TIERLAB_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", True)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

if not DEBUG:
    env_required("ALLOWED_HOSTS", "when DEBUG is off: the comma-separated host names this site "
                                  "answers to, e.g. tierlab.example.com")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# ---------------------------------------------------------------- HTTPS and security headers
# Checked by tierlab.checks (E002-E005, W001-W003) whenever DEBUG is off.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Opt-in: only behind a proxy that sets X-Forwarded-Proto itself (and strips the client's).
SECURE_PROXY_SSL_HEADER = (("HTTP_X_FORWARDED_PROTO", "https")
                           if env_bool("SECURE_PROXY_SSL_HEADER", False) else None)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = env_choice("SECURE_REFERRER_POLICY", "same-origin", [
    "no-referrer", "no-referrer-when-downgrade", "origin", "origin-when-cross-origin",
    "same-origin", "strict-origin", "strict-origin-when-cross-origin", "unsafe-url"])
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = env_choice("X_FRAME_OPTIONS", "DENY", ["DENY", "SAMEORIGIN"])

# Request bodies larger than this are refused with 413 (tierlab.api.JSONParser); a scenario
# is a few kB.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440, 1024)

# ---------------------------------------------------------------- login throttling (django-axes)
# Failed logins on /accounts/login/ and /admin/login/ (anything calling authenticate()) are
# counted per username and client address; at LOGIN_FAILURE_LIMIT the pair is locked out
# (429, registration/locked_out.html) for LOGIN_LOCKOUT_S, even with the right password. A
# successful login clears the count. Unlock early: `manage.py axes_reset` (or
# axes_reset_username NAME), or delete the row in Admin -> Axes -> Access attempts. Counts
# live in the database, so every web process sees them.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, 1)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("LOGIN_LOCKOUT_S", 900, 1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",      # first: refuses a locked-out pair
    "django.contrib.auth.backends.ModelBackend",
]

# ---------------------------------------------------------------- Content-Security-Policy (django-csp)
# Every script is a file from this origin (the Vite bundles, the admin's, the API docs'):
# no inline script, no eval. style-src-attr 'unsafe-inline' only because ECharts writes its
# tooltips as HTML with style="..." attributes (ours too, the colour dots) and the pages set a
# few swatch colours the same way; <style> elements and stylesheets stay 'self'. img-src
# data: for Pico's inline SVG icons and the empty favicon. The API docs page adds
# 'unsafe-inline' to style-src for drf-spectacular's one inline <style> (tierlab.urls).
_csp_frames = "'none'" if X_FRAME_OPTIONS == "DENY" else "'self'"
# `npm run dev` (VITE_DEV_MODE) serves the scripts and HMR, and injects CSS as <style> elements.
_csp_dev = ([f"http://localhost:{env_int('VITE_DEV_SERVER_PORT', 5173, 1)}"]
            if env_bool("VITE_DEV_MODE", False) else [])
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", *_csp_dev],
        "style-src": ["'self'", *_csp_dev, *(["'unsafe-inline'"] if _csp_dev else [])],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'", *_csp_dev, *[u.replace("http:", "ws:") for u in _csp_dev]],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": [_csp_frames],
    },
}

# ---------------------------------------------------------------- admin catalog import
# A JSON file imported in the admin (tierlab.catalog.admin_json) larger than this is refused;
# the shipped catalog is about 70 kB.
CATALOG_IMPORT_MAX_BYTES = env_int("CATALOG_IMPORT_MAX_BYTES", 2 * 1024 * 1024, 1024)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",        # Swagger UI served from here, not a CDN
    "django_filters",                 # list filters; its templates for the browsable API
    "django_vite",
    "axes",                           # login throttling
    "csp",                            # Content-Security-Policy
    "tierlab.apps.TierlabConfig",
    "tierlab.catalog",
    "tierlab.scenarios",
    "tierlab.dashboard",
]

MIDDLEWARE = [
    # First: /healthz answers load balancers before host validation and HTTPS redirects.
    "tierlab.health.HealthCheckMiddleware",
    "tierlab.middleware.RejectNulMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",            # last: turns a lockout into the 429 page
]

ROOT_URLCONF = "tierlab.urls"
WSGI_APPLICATION = "tierlab.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# ---------------------------------------------------------------- database
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'tierlab.sqlite3'}")
# Persistent connections (DB_CONN_MAX_AGE s) are checked before reuse, so a database restart
# costs one reconnect, not an error.
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0, 0),
                                              conn_health_checks=True)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    # Web and worker share one file: WAL lets readers run beside a writer.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    # A file, not :memory:, so a Celery worker subprocess can open the test database;
    # one per test process, so two test runs in one checkout do not share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test_tierlab_{os.getpid()}.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [] if DEBUG else [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# ---------------------------------------------------------------- static files + Vite
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
FRONTEND_DIST = BASE_DIR / "frontend" / "dist"
STATICFILES_DIRS = [FRONTEND_DIST]
# Vite already puts a content hash in every asset name and its modules import each other by
# those names, so files are served as built (no second, Django-side hash); whitenoise
# compresses them and marks the hashed ones immutable.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage" if DEBUG
        else "whitenoise.storage.CompressedStaticFilesStorage",
    },
}
WHITENOISE_IMMUTABLE_FILE_TEST = r"^.+/assets/[^/]+-[0-9A-Za-z_-]{8,}\.[0-9a-z]+$"

DJANGO_VITE = {
    "default": {
        "dev_mode": env_bool("VITE_DEV_MODE", False),
        "dev_server_port": env_int("VITE_DEV_SERVER_PORT", 5173, 1),
        "manifest_path": FRONTEND_DIST / ".vite" / "manifest.json",
        "static_url_prefix": "",
    }
}

# tierlab.E001 says the same, with the command that fixes it.
SILENCED_SYSTEM_CHECKS = ["django_vite.W001"]

# ---------------------------------------------------------------- REST API
REST_FRAMEWORK = {
    # Token first: an anonymous API call gets 401 with a WWW-Authenticate header.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tierlab.auth.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON only: every endpoint takes a JSON body (the front end sends JSON, a config.json
    # upload is read in the browser and sent as JSON); a form or multipart body is a 415 that
    # says to send JSON (tierlab.api.exception_handler), before anything is saved. The admin's
    # imports are Django forms, which these parsers do not serve.
    "DEFAULT_PARSER_CLASSES": [
        "tierlab.api.JSONParser",                  # size, depth and UTF-8 limits
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "tierlab.api.BrowsableAPIRenderer",        # no inline <style>: the CSP refuses it
    ],
    "NON_FIELD_ERRORS_KEY": "body",                # "expected an object, got a list" is the body's
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "tierlab.api.exception_handler",
    # Rate limits (tierlab.throttling): every request counts as the account's (or, without
    # one, the address's); the expensive endpoints also against their own scope. A 429 names
    # the limit and carries Retry-After.
    "DEFAULT_THROTTLE_CLASSES": [
        "tierlab.throttling.AnonThrottle",
        "tierlab.throttling.UserThrottle",
        "tierlab.throttling.ScopedThrottle",
    ],
}
# Requests per period (DRF's "<count>/<s|min|hour|day>"; "off" turns one off), read on every
# request. Polling a running sweep's page takes about one request a second.
TIERLAB_THROTTLE_RATES = {
    "anon": env_rate("THROTTLE_ANON_RATE", "60/min"),
    "user": env_rate("THROTTLE_USER_RATE", "1200/min"),
    # the scenario form's live estimate asks 0.5 s after each edit: two a second while typing
    "estimate": env_rate("THROTTLE_ESTIMATE_RATE", "600/min"),        # POST /api/v1/estimate/
    "runs": env_rate("THROTTLE_RUNS_RATE", "30/min"),                 # POST .../runs/
    "sweeps": env_rate("THROTTLE_SWEEPS_RATE", "10/min"),             # POST /api/v1/sweeps/
    "plans": env_rate("THROTTLE_PLANS_RATE", "10/min"),               # POST /api/v1/plans/
    "profile_fits": env_rate("THROTTLE_PROFILE_FITS_RATE", "30/min"),  # cluster-profile POST/PUT/PATCH
    "hf_import": env_rate("THROTTLE_HF_IMPORT_RATE", "30/min"),       # POST /api/v1/models/from-hf-config/
    "shared": env_rate("THROTTLE_SHARED_RATE", "120/min"),            # GET /api/v1/shared/<token>/ (per address)
}
TIERLAB_THROTTLE_KEY_PREFIX = "throttle"       # cache keys; tests use one of their own

# ---------------------------------------------------------------- cache
# Throttle counts (and nothing the app cannot lose). CACHE_URL (redis://host:port/db) names a
# Redis; by default the broker's when it is one, so every web process counts together;
# otherwise each process's own memory (the embedded SQLite mode: one process).
CACHE_URL = env_str("CACHE_URL", env_str("CELERY_BROKER_URL", "") if
                    (env_str("CELERY_BROKER_URL", "") or "").startswith(("redis://", "rediss://")) else "")
if CACHE_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CACHE_URL,
                          "KEY_PREFIX": "tierlab-cache",
                          "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2}}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

SPECTACULAR_SETTINGS = {
    "TITLE": "tierlab API",
    "DESCRIPTION": "Memory per tier, step time and fit for large-model training scenarios.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "tierlab.schema.add_error_responses",
    ],
}

# ---------------------------------------------------------------- Celery
# Hard limit: the pool process is killed and the run marked failed (tasks.RunRequest); soft
# limit: SoftTimeLimitExceeded is raised in the run, which is marked failed. tierlab.E006
# checks soft < hard.
CELERY_TASK_TIME_LIMIT = env_int("RUN_TIME_LIMIT_S", 300, 1)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("RUN_SOFT_TIME_LIMIT_S", max(1, CELERY_TASK_TIME_LIMIT - 30), 1)
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost//")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
if CELERY_BROKER_URL.startswith("filesystem://"):
    BROKER_DIR = Path(env_str("CELERY_BROKER_DIR", str(VAR_DIR / "broker")))
    for _sub in ("queue", "processed", "control"):
        (BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "polling_interval": 0.25,
    }
else:
    # With acks_late, Redis redelivers a task whose worker vanished after this many seconds:
    # longer than a run may take, shorter than the "worker lost" cutoff below.
    # tierlab.E007 checks it is longer than the hard time limit. Every worker looks for such
    # orphaned messages every 10 s (kombu's default throttle would make it every 100 s).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT_S", CELERY_TASK_TIME_LIMIT + 30, 1),
        "unacked_restore_interval": 10,
        "unacked_restore_throttle": 1,
        "socket_connect_timeout": 5,
    }

CELERY_TASK_IGNORE_RESULT = True      # results live on Run rows
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# The worker's timer thread sleeps this long between looks at its schedule (Celery's default
# 1 s), and a warm shutdown waits for it to wake: with the filesystem broker's loop (which
# polls, up to 2 s a cycle) and the pool's join, an idle worker took 5-6.6 s to stop, past the
# 5 s honcho gives it on Ctrl-C of scripts/start before a SIGKILL (tests/web/test_worker_stop.py).
CELERY_WORKER_TIMER_PRECISION = env_float("WORKER_TIMER_PRECISION_S", 0.1, 0.01)
# A pool process is replaced after this many tasks, or after a task that left its resident
# memory above this many KiB (Celery's unit), so memory one large job took is given back.
CELERY_WORKER_MAX_TASKS_PER_CHILD = env_int("WORKER_MAX_TASKS_PER_CHILD", 100, 1)
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int("WORKER_MAX_MEMORY_PER_CHILD_KIB", 1_048_576, 1)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# Queue the web side sends runs to (the worker reads it with -Q; tests use their own).
TIERLAB_RUN_QUEUE = env_str("TIERLAB_RUN_QUEUE", "tierlab")
CELERY_TASK_DEFAULT_QUEUE = TIERLAB_RUN_QUEUE
# A run still "running" this long after it started lost its worker and is marked failed.
TIERLAB_RUN_STALE_AFTER_S = CELERY_TASK_TIME_LIMIT + env_int("RUN_STALE_MARGIN_S", 60, 0)
# A run (or sweep chunk) still "queued" this long after it was sent lost its message (a broker
# restarted without persistence, flushed, failed over): it is sent again, at most
# RUN_MAX_REQUEUES times, then marked failed.
TIERLAB_RUN_QUEUED_TIMEOUT_S = env_int("RUN_QUEUED_TIMEOUT_S", 1800, 1)
TIERLAB_RUN_MAX_REQUEUES = env_int("RUN_MAX_REQUEUES", 2, 0)
# Sweeps (tierlab.dashboard.sweeps.chunk_size): split into about SWEEP_CHUNKS_PER_WORKER
# chunks for each of SWEEP_WORKERS worker processes (all workers' pool processes together;
# by default the WORKER_CONCURRENCY scripts/start and compose give the one worker), fewer
# points a chunk where they would take long; SWEEP_CHUNK_POINTS > 0 fixes the points a chunk.
TIERLAB_SWEEP_WORKERS = env_int("SWEEP_WORKERS", env_int("WORKER_CONCURRENCY", 2, 1), 1)
TIERLAB_SWEEP_CHUNKS_PER_WORKER = env_int("SWEEP_CHUNKS_PER_WORKER", 2, 1)
TIERLAB_SWEEP_CHUNK_POINTS = env_int("SWEEP_CHUNK_POINTS", 0, 0)
# Creating a sweep checks that each axis value is valid somewhere on the grid by building
# (never evaluating) at most this many of its points (tierlab.dashboard.sweeps, bounded work).
TIERLAB_SWEEP_VALUE_CHECK_POINTS = env_int("SWEEP_VALUE_CHECK_POINTS", 200, 1)
# A run whose worker died this many times (killed mid-run, redelivered) is marked failed.
TIERLAB_RUN_MAX_ATTEMPTS = env_int("RUN_MAX_ATTEMPTS", 3, 1)
# A plan's candidates go to at least TIERLAB_PLAN_CHUNKS Celery tasks (so every worker takes
# part), more where a chunk would hold over TIERLAB_PLAN_CHUNK_CANDIDATES candidates: a
# candidate that fits takes about 10 ms of engine time, so a chunk of 5,000 ends well inside
# the run time limit (tierlab/dashboard/plans.py, n_chunks).
TIERLAB_PLAN_CHUNKS = env_int("TIERLAB_PLAN_CHUNKS", 8, 1)
TIERLAB_PLAN_CHUNK_CANDIDATES = env_int("TIERLAB_PLAN_CHUNK_CANDIDATES", 5000, 1)
# A user's queued and running runs (not counting runs that wait for an identical one),
# sweeps and plans are at most these many each (0: no limit); one more is a 409 naming them
# (tierlab.jobs.check_active), so one account cannot fill the queue everyone's work waits in.
TIERLAB_MAX_ACTIVE_RUNS = env_int("MAX_ACTIVE_RUNS_PER_USER", 20, 0)
TIERLAB_MAX_ACTIVE_SWEEPS = env_int("MAX_ACTIVE_SWEEPS_PER_USER", 3, 0)
TIERLAB_MAX_ACTIVE_PLANS = env_int("MAX_ACTIVE_PLANS_PER_USER", 3, 0)
# Test-only: every run sleeps this long before the engine starts (kill and time-limit tests).
TIERLAB_TEST_TASK_SLEEP_S = env_float("TIERLAB_TEST_TASK_SLEEP_S", 0.0, 0.0)
TIERLAB_TEST_TASK_STUCK = env_bool("TIERLAB_TEST_TASK_STUCK", False)   # ... ignoring the soft limit
# API tokens are remembered this long per web process (0: look each one up every time).
TOKEN_CACHE_S = env_float("TOKEN_CACHE_S", 10.0, 0.0)
# Each web process checks the preset tables for admin edits at most this often.
CATALOG_CHECK_S = env_float("CATALOG_CHECK_S", 2.0, 0.0)
# A request evaluates a scenario itself (POST /api/v1/estimate/) only when the engine's cost
# bound is at most this many work units (~1 us of engine time each; simulation.cost);
# more is a 413: save it and start a run, which the worker does within its time limits.
ESTIMATE_MAX_WORK_UNITS = env_int("ESTIMATE_MAX_WORK_UNITS", 500_000, 0)
# POST /api/v1/estimate/ takes bodies of at most this many bytes (413 beyond; the smaller of
# this and DATA_UPLOAD_MAX_MEMORY_SIZE): a scenario is a few kB, a recommender's 1,000 tables
# about 100 kB, and parsing a 2.5 MB body took seconds.
ESTIMATE_MAX_BODY_BYTES = env_int("ESTIMATE_MAX_BODY_BYTES", 262_144, 1024)
# Cluster profiles one user may own (a create past it is a 400 naming "name"; 0: no limit).
TIERLAB_MAX_PROFILES_PER_USER = env_int("MAX_PROFILES_PER_USER", 100, 0)
# GET /healthz gives the broker this long to answer.
HEALTH_BROKER_TIMEOUT_S = env_float("HEALTH_BROKER_TIMEOUT_S", 2.0, 0.1)

# ---------------------------------------------------------------- logging
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
