"""Fuzz the REST API from its own OpenAPI schema (schemathesis), logged in with a token."""

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tierlab.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)


@pytest.fixture
def token(db, owner):
    """A token, and requests that keep the test's database connection (as Django's test
    client does: the WSGI handler would close it after each request)."""
    from rest_framework.authtoken.models import Token

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield Token.objects.create(user=owner).key
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_answers_as_its_schema_says(case, token):
    case.call_and_validate(headers={"Authorization": f"Token {token}"},
                           excluded_checks=[positive_data_acceptance])
