"""GET /healthz: 200 when the database and the broker answer, 503 naming what failed."""

import time
from unittest import mock

import pytest
from django.db import OperationalError

pytestmark = pytest.mark.django_db

URL = "/healthz"


def test_it_reports_both_ok(client):
    r = client.get(URL)
    assert r.status_code == 200
    assert r.json() == {"database": "ok", "broker": "ok"}
    assert r["Cache-Control"] == "no-store"


def test_it_names_an_unreachable_broker(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"      # nothing listens on port 1
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {}
    started = time.monotonic()
    r = client.get(URL)
    assert r.status_code == 503
    assert r.json() == {"database": "ok", "broker": "failed"}
    assert time.monotonic() - started < 10


def test_it_names_a_broken_database(client):
    with mock.patch("tierlab.health.check_database", side_effect=OperationalError("gone")):
        r = client.get(URL)
    assert r.status_code == 503
    assert r.json() == {"database": "failed", "broker": "ok"}


def test_it_answers_probes_whatever_their_host_header(client, settings):
    settings.ALLOWED_HOSTS = ["tierlab.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    assert client.get(URL, HTTP_HOST="10.1.2.3:8000").status_code == 200
    assert client.get("/api/v1/catalog/models/", HTTP_HOST="10.1.2.3:8000").status_code == 400


def test_it_only_reads(client):
    assert client.post(URL).status_code == 405
    assert client.head(URL).status_code == 200
