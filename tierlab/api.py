"""Project-wide REST API helpers."""

from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    """DRF's handler, with a malformed request body reported under the field ``body``.

    Every 400 then has one shape: ``{field: [message, ...]}``.
    """
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.ParseError):
        response.data = {"body": [str(exc.detail)]}
    return response
