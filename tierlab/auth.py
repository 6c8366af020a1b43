"""Token authentication that remembers a token for a few seconds per web process.

Checking a token costs an ORM query (token joined to its user) on every API call: a third
of a quick estimate's server time. ``CachedTokenAuthentication`` keeps key -> user in a
small per-process TTL cache (cachetools), ``TOKEN_CACHE_S`` seconds (default 10; 0 turns
it off). Deleting a token or saving its user (say, deactivating them) forgets it at once
in the process that did it; other processes see it within ``TOKEN_CACHE_S``.
"""

from __future__ import annotations

import threading

from cachetools import TTLCache
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

_lock = threading.Lock()             # TTLCache is not thread-safe (gthread workers)
_cache: TTLCache | None = None


def _store() -> TTLCache | None:
    global _cache
    ttl = getattr(settings, "TOKEN_CACHE_S", 0)
    if ttl <= 0:
        return None
    if _cache is None or _cache.ttl != ttl:
        _cache = TTLCache(maxsize=4096, ttl=ttl)
    return _cache


def forget(key: str | None = None, user_id: int | None = None) -> None:
    """Drop one token, every token of one user, or (no argument) everything."""
    with _lock:
        if _cache is None:
            return
        if key is None and user_id is None:
            _cache.clear()
            return
        for k, (token_user_id, _user, _token) in list(_cache.items()):
            if k == key or token_user_id == user_id:
                _cache.pop(k, None)


class CachedTokenAuthentication(TokenAuthentication):
    """DRF's ``TokenAuthentication`` with a per-process memory of recent tokens."""

    def authenticate_credentials(self, key):
        store = _store()
        if store is None:
            return super().authenticate_credentials(key)
        with _lock:
            hit = store.get(key)
        if hit is not None:
            return hit[1], hit[2]              # (user, token): request.auth is a Token either way
        user, token = super().authenticate_credentials(key)   # raises for unknown / inactive
        with _lock:
            store[key] = (user.pk, user, token)
        return user, token


@receiver(post_delete, sender=Token)
def _token_deleted(sender, instance, **kwargs):
    forget(key=instance.key)


@receiver(post_save, sender=get_user_model())
@receiver(post_delete, sender=get_user_model())
def _user_changed(sender, instance, **kwargs):
    forget(user_id=instance.pk)
