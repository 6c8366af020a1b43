"""Fuzz the REST API from its own OpenAPI schema (schemathesis), logged in with a token.

Every operation in ``/api/schema/`` gets ``TIERLAB_FUZZ_EXAMPLES`` generated requests (25 by
default, about half a minute on 2 cores; valid and invalid ones) sent through the WSGI app.
The responses must not be 500s, must have a documented status code and content type and
must match the documented schema; requests that break the schema must be rejected.

One check is left out: ``positive_data_acceptance`` (a request that fits the schema must be
accepted). A scenario is a free-form JSON object in the schema; the engine decides what a
valid one is and says so with a 400 naming the field, which that check would count as a bug.
"""

import os

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tierlab.wsgi import application

pytestmark = pytest.mark.fuzz

EXAMPLES = int(os.environ.get("TIERLAB_FUZZ_EXAMPLES", "25"))

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
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_answers_as_its_schema_says(case, token):
    case.call_and_validate(headers={"Authorization": f"Token {token}"},
                           excluded_checks=[positive_data_acceptance])
