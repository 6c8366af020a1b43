"""Project-wide rows: the responses kept for ``Idempotency-Key`` replays (tierlab/idempotency.py)."""

from django.conf import settings
from django.db import models


class IdempotencyKey(models.Model):
    """The finished response to a POST that carried an ``Idempotency-Key`` header.

    One row per user and key: a repeat of the same request within the key's lifetime gets
    this response again instead of a second run or sweep. Only successful (2xx) responses
    are kept; a request that failed may be retried with the same key.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64, help_text="sha256 of the method, path and parsed body.")
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField(null=True)
    response_location = models.CharField(max_length=500, blank=True,
                                         help_text="The Location header, if the response had one.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique_per_user")]

    def __str__(self):
        return f"Idempotency-Key {self.key!r} of user {self.user_id}"
