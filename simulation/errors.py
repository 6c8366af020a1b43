"""The one exception the engine raises for bad input."""


class ScenarioError(ValueError):
    """Bad input, naming the field at fault.

    ``field`` is a dotted path into the scenario JSON (``"training.global_batch_size"``);
    ``message`` says what is wrong and what would be accepted. ``str(err)`` is
    ``"<field>: <message>"``, which the REST API returns as a 400. ``depends_on``: the
    other fields a cross-field check read (their defaults when not given), so that
    :func:`every_error` does not report it once one of them was found bad and left out.
    """

    def __init__(self, field: str, message: str, depends_on: tuple[str, ...] = ()):
        self.field = field
        self.message = message
        self.depends_on = depends_on
        super().__init__(f"{field}: {message}")


class ScenarioErrors(ScenarioError):
    """Several bad fields of one input, reported at once.

    ``errors`` is the list of :class:`ScenarioError` (two or more, in the order found);
    ``field`` and ``message`` are the first's, so a caller that shows one error still can;
    ``str(err)`` joins every ``"<field>: <message>"`` with ``"; "``.
    """

    def __init__(self, errors: list[ScenarioError]):
        self.errors = list(errors)
        super().__init__(self.errors[0].field, self.errors[0].message)
        self.args = ("; ".join(f"{e.field}: {e.message}" for e in self.errors),)


MAX_REPORTED_ERRORS = 20


def add_reads(exc: ScenarioError, fields: tuple) -> ScenarioError:
    """``exc`` (and each error it holds) with ``fields``, the dotted fields the check that
    raised it read, added to its ``depends_on``, so that :func:`every_error` does not report
    it once one of them was found bad and left out (the check then read that field's
    default, and its message would quote a value the input never gave). Called in an
    ``except`` around the check (free when nothing is raised; a hot path's checks)."""
    for e in [exc, *getattr(exc, "errors", ())]:
        e.depends_on = tuple(dict.fromkeys((*e.depends_on, *fields)))
    return exc



class Collect:
    """Gathers the ScenarioErrors of a section's fields, so a section reports every bad
    field it holds at once (a required field left out cannot be dropped and retried by
    :func:`every_error`, so the section itself must name all of them).

    ``bad(parse, *args)`` is ``parse(*args)``, or None after recording what it raised;
    ``bad.add(field, message="is required")`` records one; ``bad.check()`` raises the
    one ScenarioError, or :class:`ScenarioErrors` for several, when any was recorded.
    """

    def __init__(self):
        self.errors: list[ScenarioError] = []

    def __call__(self, parse, *args, **kwargs):
        try:
            return parse(*args, **kwargs)
        except ScenarioErrors as exc:
            self.errors.extend(exc.errors)
        except ScenarioError as exc:
            self.errors.append(exc)
        return None

    def add(self, field: str, message: str = "is required") -> None:
        self.errors.append(ScenarioError(field, message))

    def passes(self, parse, *args, **kwargs) -> bool:
        """``bad(parse, *args)``, True when it recorded nothing (for checks returning None)."""
        before = len(self.errors)
        self(parse, *args, **kwargs)
        return len(self.errors) == before

    def named(self, field: str) -> bool:
        """True when an error recorded names ``field``."""
        return any(e.field == field for e in self.errors)

    def check(self, limit: int | None = None) -> None:
        """Raise what was recorded (the first ``limit`` errors when given)."""
        errors = self.errors[:limit] if limit is not None else self.errors
        if errors:
            raise errors[0] if len(errors) == 1 else ScenarioErrors(errors)


def every_error(check, d):
    """``check(d)``'s value; when it raises ScenarioError, every bad field ``d`` holds.

    ``d`` is the input JSON (never changed). After an error, the field it names is left out
    of a copy and ``check`` runs again: a field left out takes its default, as if not
    given. That goes on until ``check`` passes or names a field the input does not hold
    (a cross-field check, or a consequence of what was left out), one found already, a
    check that depends on a field found bad (``ScenarioError.depends_on``), or
    :data:`MAX_REPORTED_ERRORS`. A :class:`ScenarioErrors` (a section naming several
    fields, :class:`Collect`) counts as each of its errors; the fields it names that the
    input holds are all left out before the next run. Raises the ScenarioError when there is one, else
    :class:`ScenarioErrors` with all of them.
    """
    found: list[ScenarioError] = []
    current = d
    while True:
        try:
            value = check(current)
        except ScenarioError as exc:
            seen = {e.field for e in found}
            # after the first run, an error on a field the input does not hold is a
            # consequence of what was left out (or a cross-field check): not reported
            # an error of a cross-field check that read a field found bad (now its
            # default) is a consequence of leaving that field out too
            new = [e for e in getattr(exc, "errors", None) or [exc]
                   if e.field not in seen and (not found or _holds(d, e.field))
                   and not seen.intersection(getattr(e, "depends_on", ()))]
            if not new:
                break
            found.extend(new)
            smaller = current
            for e in new:
                dropped = _without(smaller, e.field)
                smaller = smaller if dropped is None else dropped
            if smaller is current or len(found) >= MAX_REPORTED_ERRORS:
                break
            current = smaller
        else:
            if not found:
                return value
            break
    found = found[:MAX_REPORTED_ERRORS]
    raise found[0] if len(found) == 1 else ScenarioErrors(found)


def _steps(field: str) -> list:
    return [int(s) if s.isdigit() else s for s in field.split(".")] if field else []


def _holds(d, field: str) -> bool:
    node = d
    for step in _steps(field):
        if isinstance(node, dict) and isinstance(step, str) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        else:
            return False
    return bool(field)


def _without(d, field: str):
    """A copy of ``d`` without ``field`` (copying only the containers on its path), or
    None when ``d`` does not hold it or it is a list item (the items after it would move)."""
    steps = _steps(field)
    if not steps or not _holds(d, field) or not isinstance(steps[-1], str):
        return None

    def drop(node, rest):
        if len(rest) == 1:
            return {k: v for k, v in node.items() if k != rest[0]}
        out = dict(node) if isinstance(node, dict) else list(node)
        out[rest[0]] = drop(node[rest[0]], rest[1:])
        return out

    return drop(d, steps)
