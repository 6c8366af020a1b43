"""Production settings (DEBUG=0): they load from a good environment, a bad one stops startup
with a message naming the variable, and each unsafe combination is a system check with an id.

The subprocess tests start a fresh interpreter with a controlled environment, as gunicorn,
``manage.py`` or a Celery worker would.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tierlab import checks

ROOT = Path(__file__).resolve().parents[2]

# Every variable the security settings read; scrubbed so the host's environment cannot leak in.
# DJANGO_ALLOW_ASYNC_UNSAFE: set for the browser tests' process, never in deployment.
SCRUBBED = ("DJANGO_ALLOW_ASYNC_UNSAFE", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "SECURE_COOKIES",
            "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS",
            "SECURE_HSTS_PRELOAD", "SECURE_PROXY_SSL_HEADER", "SECURE_REFERRER_POLICY",
            "X_FRAME_OPTIONS", "RUN_TIME_LIMIT_S", "RUN_SOFT_TIME_LIMIT_S",
            "CELERY_VISIBILITY_TIMEOUT_S", "TIERLAB_TEST_TASK_SLEEP_S", "TIERLAB_TEST_TASK_STUCK",
            "DJANGO_SETTINGS_MODULE")
GOOD = {
    "DEBUG": "0",
    "SECRET_KEY": "k3y-" + "x7Qz" * 12,
    "ALLOWED_HOSTS": "tierlab.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://tierlab.example.com",
    "SECURE_HSTS_SECONDS": "3600",
    "SECURE_PROXY_SSL_HEADER": "1",
    "SECURE_SSL_REDIRECT": "1",
    "VITE_DEV_MODE": "1",            # no built front end needed for these checks
}
SHOW = ("DEBUG ALLOWED_HOSTS SESSION_COOKIE_SECURE CSRF_COOKIE_SECURE SECURE_SSL_REDIRECT "
        "SECURE_HSTS_SECONDS SECURE_PROXY_SSL_HEADER SECURE_CONTENT_TYPE_NOSNIFF "
        "SECURE_REFERRER_POLICY X_FRAME_OPTIONS CSRF_TRUSTED_ORIGINS").split()
CHECK_AND_SHOW = (
    "import json, django; django.setup()\n"
    "from django.conf import settings\n"
    "from django.core.management import call_command\n"
    "call_command('check', '--deploy', '--fail-level', 'ERROR', verbosity=0)\n"
    f"print(json.dumps({{name: getattr(settings, name) for name in {SHOW!r}}}))\n")


def django_process(code=CHECK_AND_SHOW, **env):
    full = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    full.update(DJANGO_SETTINGS_MODULE="tierlab.settings", **env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=120)


def test_it_loads_with_a_good_environment():
    result = django_process(**GOOD)
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values == {
        "DEBUG": False, "ALLOWED_HOSTS": ["tierlab.example.com"],
        "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True, "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 3600, "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_CONTENT_TYPE_NOSNIFF": True, "SECURE_REFERRER_POLICY": "same-origin",
        "X_FRAME_OPTIONS": "DENY", "CSRF_TRUSTED_ORIGINS": ["https://tierlab.example.com"]}
    assert "tierlab." not in result.stderr           # no tierlab warning either


@pytest.mark.parametrize("change, message", [
    ({"SECRET_KEY": ""}, "SECRET_KEY must be set when DEBUG is off"),
    ({"ALLOWED_HOSTS": ""}, "ALLOWED_HOSTS must be set when DEBUG is off"),
    ({"SECURE_HSTS_SECONDS": "1y"}, "SECURE_HSTS_SECONDS must be a whole number, got '1y'"),
    ({"SECURE_HSTS_SECONDS": "-5"}, "SECURE_HSTS_SECONDS must be at least 0"),
    ({"SECURE_COOKIES": "sometimes"}, "SECURE_COOKIES must be a boolean"),
    ({"SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}, "SECURE_PROXY_SSL_HEADER must be a boolean"),
    ({"X_FRAME_OPTIONS": "ALLOWALL"}, "X_FRAME_OPTIONS must be one of DENY, SAMEORIGIN; got 'ALLOWALL'"),
    ({"SECURE_REFERRER_POLICY": "nope"}, "SECURE_REFERRER_POLICY must be one of"),
    ({"DATA_UPLOAD_MAX_MEMORY_SIZE": "10"}, "DATA_UPLOAD_MAX_MEMORY_SIZE must be at least 1024"),
    ({"TIERLAB_TEST_TASK_SLEEP_S": "soon"}, "TIERLAB_TEST_TASK_SLEEP_S must be a number"),
])
def test_a_bad_variable_stops_startup_naming_it(change, message):
    result = django_process(**{**GOOD, **change})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr, result.stderr


@pytest.mark.parametrize("change, check_id, words", [
    ({"SECRET_KEY": "short"}, "tierlab.E002", "SECRET_KEY is insecure"),
    ({"ALLOWED_HOSTS": ","}, "tierlab.E003", "ALLOWED_HOSTS is empty"),
    ({"CSRF_TRUSTED_ORIGINS": "https://tierlab.example.com/app"}, "tierlab.E004", "not origins"),
    ({"SECURE_HSTS_PRELOAD": "1"}, "tierlab.E005", "SECURE_HSTS_PRELOAD"),
    ({"RUN_TIME_LIMIT_S": "60", "RUN_SOFT_TIME_LIMIT_S": "60"}, "tierlab.E006", "RUN_SOFT_TIME_LIMIT_S"),
])
def test_an_unsafe_combination_stops_manage_py_check(change, check_id, words):
    result = django_process(**{**GOOD, **change})
    assert result.returncode != 0
    assert "SystemCheckError" in result.stderr
    assert check_id in result.stderr and words in result.stderr, result.stderr


def test_the_security_headers_are_sent(client, settings, db):
    settings.SECURE_HSTS_SECONDS = 3600
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    r = client.get("/api/v1/catalog/models/", secure=True)
    assert r.status_code == 200
    assert r["Strict-Transport-Security"] == "max-age=3600; includeSubDomains"
    assert r["X-Content-Type-Options"] == "nosniff"
    assert r["X-Frame-Options"] == "DENY"
    assert r["Referrer-Policy"] == "same-origin"
    assert r["Cross-Origin-Opener-Policy"] == "same-origin"


def test_the_https_redirect_trusts_the_proxy_header_only_when_told(client, settings, db):
    settings.SECURE_SSL_REDIRECT = True
    r = client.get("/api/v1/catalog/models/", HTTP_X_FORWARDED_PROTO="https")
    assert r.status_code == 301 and r["Location"].startswith("https://")
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    from django.test import Client

    assert Client().get("/api/v1/catalog/models/", HTTP_X_FORWARDED_PROTO="https").status_code == 200


# ---------------------------------------------------------------- each check, in this process
@pytest.fixture
def production(settings):
    settings.DEBUG = False
    settings.SECRET_KEY = GOOD["SECRET_KEY"]
    settings.ALLOWED_HOSTS = ["tierlab.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://tierlab.example.com"]
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_SSL_REDIRECT = False
    return settings


def ids(errors):
    return [e.id for e in errors]


def test_e002_an_insecure_secret_key(production):
    assert checks.check_secret_key() == []
    for key in ("short", "dev-only-insecure-key-do-not-use-in-production", "django-insecure-" + "a" * 40):
        production.SECRET_KEY = key
        assert ids(checks.check_secret_key()) == ["tierlab.E002"], key
    production.DEBUG = True
    assert checks.check_secret_key() == []


def test_e003_no_allowed_hosts_and_w002_a_wildcard(production):
    assert checks.check_allowed_hosts() == []
    production.ALLOWED_HOSTS = []
    assert ids(checks.check_allowed_hosts()) == ["tierlab.E003"]
    production.ALLOWED_HOSTS = ["tierlab.example.com", "*"]
    assert ids(checks.check_allowed_hosts()) == ["tierlab.W002"]


@pytest.mark.parametrize("origin, ok", [
    ("https://tierlab.example.com", True), ("http://127.0.0.1:8000", True),
    ("https://*.example.com", True), ("tierlab.example.com", False),
    ("https://tierlab.example.com/", False), ("ftp://tierlab.example.com", False),
    ("https://", False)])
def test_e004_csrf_trusted_origins(production, origin, ok):
    production.CSRF_TRUSTED_ORIGINS = [origin]
    assert ids(checks.check_csrf_trusted_origins()) == ([] if ok else ["tierlab.E004"])


def test_e005_hsts_preload_w001_plain_cookies_w003_redirect_loop(production):
    assert checks.check_https() == []
    production.SECURE_HSTS_PRELOAD, production.SECURE_HSTS_SECONDS = True, 3600
    assert ids(checks.check_https()) == ["tierlab.E005"]
    production.SECURE_HSTS_SECONDS, production.SECURE_HSTS_INCLUDE_SUBDOMAINS = 31_536_000, True
    assert checks.check_https() == []
    production.SESSION_COOKIE_SECURE = False
    assert ids(checks.check_https()) == ["tierlab.W001"]
    production.SESSION_COOKIE_SECURE = True
    production.SECURE_SSL_REDIRECT, production.SECURE_PROXY_SSL_HEADER = True, None
    assert ids(checks.check_https()) == ["tierlab.W003"]


def test_e006_e007_w004_run_limits(settings):
    settings.CELERY_TASK_TIME_LIMIT, settings.CELERY_TASK_SOFT_TIME_LIMIT = 300, 270
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 330}
    settings.TIERLAB_TEST_TASK_SLEEP_S = 0.0
    assert checks.check_run_limits() == []
    settings.CELERY_TASK_SOFT_TIME_LIMIT = 300
    assert ids(checks.check_run_limits()) == ["tierlab.E006"]
    settings.CELERY_TASK_SOFT_TIME_LIMIT = 270
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 300}
    assert ids(checks.check_run_limits()) == ["tierlab.E007"]
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_in": "x"}     # filesystem broker
    settings.TIERLAB_TEST_TASK_SLEEP_S = 2.0
    assert ids(checks.check_run_limits()) == ["tierlab.W004"]
