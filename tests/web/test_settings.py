"""Settings come from environment variables through typed helpers that fail loudly."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from tierlab.env import env_bool, env_choice, env_float, env_int, env_list, env_required, env_str

ROOT = Path(__file__).resolve().parents[2]


def test_env_helpers_parse(monkeypatch):
    monkeypatch.setenv("X_BOOL", "Yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    monkeypatch.setenv("X_EMPTY", "")
    assert env_bool("X_BOOL", False) is True
    assert env_int("X_INT", 0) == 42
    assert env_list("X_LIST", []) == ["a", "b", "c"]
    assert env_str("X_EMPTY", "default") == "default"
    assert env_bool("X_UNSET", True) is True


def test_more_env_helpers_parse(monkeypatch):
    monkeypatch.setenv("X_FLOAT", "0.25")
    monkeypatch.setenv("X_CHOICE", "SAMEORIGIN")
    assert env_float("X_FLOAT", 0.0) == 0.25 and env_float("X_UNSET", 1.5) == 1.5
    assert env_choice("X_CHOICE", "DENY", ["DENY", "SAMEORIGIN"]) == "SAMEORIGIN"
    assert env_choice("X_UNSET", "DENY", ["DENY", "SAMEORIGIN"]) == "DENY"
    assert env_required("X_FLOAT", "always") == "0.25"


@pytest.mark.parametrize("helper, value", [(lambda: env_bool("X", False), "maybe"),
                                           (lambda: env_int("X", 0), "4.5"),
                                           (lambda: env_int("X", 0, minimum=1), "0"),
                                           (lambda: env_float("X", 0.0), "fast"),
                                           (lambda: env_float("X", 0.0), "nan"),
                                           (lambda: env_float("X", 0.0, minimum=0), "-1"),
                                           (lambda: env_choice("X", "a", ["a", "b"]), "c"),
                                           (lambda: env_required("X", "here"), " ")])
def test_env_helpers_fail_loudly(monkeypatch, helper, value):
    monkeypatch.setenv("X", value)
    with pytest.raises(ImproperlyConfigured) as info:
        helper()
    assert "X must be" in str(info.value)


def _import_settings(**env):
    full = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "ALLOWED_HOSTS")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", "import tierlab.settings"], cwd=ROOT, env=full,
                          capture_output=True, text=True)


def test_production_needs_a_secret_key():
    result = _import_settings(DEBUG="0", ALLOWED_HOSTS="tierlab.example.com")
    assert result.returncode != 0 and "SECRET_KEY must be set" in result.stderr
    assert _import_settings(DEBUG="0", SECRET_KEY="s3cret", ALLOWED_HOSTS="tierlab.example.com").returncode == 0


def test_plan_chunks_come_from_the_environment():
    """TIERLAB_PLAN_CHUNKS / TIERLAB_PLAN_CHUNK_CANDIDATES (README, Configuration) are read at
    start, and a value below 1 stops it naming the variable."""
    code = ("import django; django.setup(); "
            "from tierlab.dashboard.plans import n_chunks; print(n_chunks(96), n_chunks(4001))")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="tierlab.settings",
               TIERLAB_PLAN_CHUNKS="3", TIERLAB_PLAN_CHUNK_CANDIDATES="1000")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "5"]     # 4,001 candidates: 5 chunks of at most 1,000
    bad = _import_settings(TIERLAB_PLAN_CHUNKS="0")
    assert bad.returncode != 0 and "TIERLAB_PLAN_CHUNKS must be at least 1" in bad.stderr


def test_a_bad_boolean_stops_startup():
    result = _import_settings(DEBUG="perhaps")
    assert result.returncode != 0 and "DEBUG must be a boolean" in result.stderr


@pytest.mark.skipif(not os.environ.get("CI"), reason="CI runs on PostgreSQL + Redis")
def test_ci_uses_postgresql_and_redis(settings):
    from django.db import connection

    assert connection.vendor == "postgresql"
    assert settings.CELERY_BROKER_URL.startswith("redis://")


def test_backends_follow_the_environment(settings):
    """Without DATABASE_URL / CELERY_BROKER_URL: SQLite file + filesystem broker."""
    from django.db import connection

    if not os.environ.get("DATABASE_URL"):
        assert connection.vendor == "sqlite"
        assert connection.settings_dict["NAME"] != ":memory:"
    if not os.environ.get("CELERY_BROKER_URL"):
        assert settings.CELERY_BROKER_URL.startswith("filesystem://")
