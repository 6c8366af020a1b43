"""The catalog's preset tables as the engine resolves scenarios with them.

Kept in the catalog (not in its users) so packages depend only downward: the scenario
services, the dashboard and the catalog's own labels all read them from here.
"""

import time

from django.conf import settings
from django.db import connection

from tierlab.catalog.models import Accelerator, ModelPreset, NodeTemplate

# (engine lookup key, model, attribute the engine names a row by)
_PRESET_TABLES = [("models", ModelPreset, "slug"), ("nodes", NodeTemplate, "slug"),
                  ("accelerators", Accelerator, "slug")]
_LAZY_TABLES: dict = {}                     # engine lookup key -> factory of a table read on demand
_catalog_cache: tuple = (None, None)       # (version, tables), per process
_catalog_checked_at = float("-inf")         # time.monotonic() of the last version query


def register_table(key: str, model, key_attr: str = "pk") -> None:
    """Serve ``model``'s rows (``engine_spec()`` each, by ``key_attr``) as the engine's
    ``key`` lookup table too, the whole table in every process (for small tables an admin
    edits). Apps above the catalog register theirs at start (``AppConfig.ready``), so the
    catalog never imports its users. The model needs ``updated_at`` (the version query reads it)."""
    if all(k != key for k, _, _ in _PRESET_TABLES):
        _PRESET_TABLES.append((key, model, key_attr))
    forget_catalog()


def register_lazy_table(key: str, factory) -> None:
    """Serve ``factory()`` (a mapping that reads a row when the engine asks for its key)
    as the engine's ``key`` table, a new one for each :func:`catalog_lookups` call: for a
    table of users' rows, too many to hold in every process (the scenarios app's cluster
    profiles)."""
    _LAZY_TABLES[key] = factory


def forget_catalog() -> None:
    """Make the next ``catalog_lookups`` ask the database (a preset row changed here)."""
    global _catalog_checked_at
    _catalog_checked_at = float("-inf")


def _catalog_version() -> tuple:
    """Row count and last edit of each preset table, in one query (cheap to ask per request)."""
    sql = " UNION ALL ".join(
        f"SELECT {i}, COUNT(*), MAX(updated_at) FROM {connection.ops.quote_name(model._meta.db_table)}"
        for i, (_, model, _) in enumerate(_PRESET_TABLES))
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return tuple(sorted(tuple(row) for row in cursor.fetchall()))


def catalog_lookups() -> dict:
    """Preset tables for the engine, from the database so admin edits take effect.

    A table with no rows yet (catalog not loaded) falls back to the engine's built-ins.
    Tables registered by other apps come along: ``profiles`` reads a cluster profile by id
    when a scenario names one (:func:`register_lazy_table`; never the whole table); who may
    name which is checked where a user's scenario comes in (``scenarios.profiles``), not here.
    Rebuilt when a preset row is added, removed or saved (the version query, asked at most
    every ``CATALOG_CHECK_S`` seconds; at once after an edit in this process); the engine
    only reads these tables, so one copy per process serves every request.
    """
    global _catalog_cache, _catalog_checked_at
    cached_version, tables = _catalog_cache
    now = time.monotonic()
    if tables is not None and now - _catalog_checked_at < settings.CATALOG_CHECK_S:
        return _with_lazy(tables)
    version = _catalog_version()
    _catalog_checked_at = now
    if version != cached_version:
        tables = {}
        for key, model, attr in _PRESET_TABLES:
            rows = {getattr(row, attr): row.engine_spec() for row in model.objects.all()}
            tables[key] = rows or None
        _catalog_cache = (version, tables)
    return _with_lazy(tables)


def _with_lazy(tables: dict) -> dict:
    return {**tables, **{key: factory() for key, factory in _LAZY_TABLES.items()}}
