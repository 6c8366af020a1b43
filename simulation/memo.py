"""Results of pure functions of frozen scenario sections, remembered by identity.

Scenario sections are parsed once and shared (``scenario._parsed``), so a sweep or a form
being typed into hands the engine the same section objects again and again. A function of
those sections alone (parameter count, layout, activations, the checkpoint-target check)
need not run again for the same objects. Keys are the arguments' ``id``s; each entry keeps
its arguments alive, so an id cannot be reused by another object while it is remembered.
Exceptions are not remembered (they raise each time). ``forget()`` clears every memo.
"""

from __future__ import annotations

from typing import Callable

_ALL: list["ByIdentity"] = []


class ByIdentity:
    """``fn(*args)``, remembered per identity of ``args`` (at most ``maxsize`` entries;
    the table is cleared when full, which is cheaper than tracking recency)."""

    __slots__ = ("fn", "table", "maxsize", "__wrapped__")

    def __init__(self, fn: Callable, maxsize: int = 4096):
        self.fn, self.table, self.maxsize, self.__wrapped__ = fn, {}, maxsize, fn
        _ALL.append(self)

    def __call__(self, *args):
        key = tuple(map(id, args))
        hit = self.table.get(key)
        if hit is not None:
            return hit[1]
        out = self.fn(*args)
        if len(self.table) >= self.maxsize:
            self.table.clear()
        self.table[key] = (args, out)
        return out

    def clear(self) -> None:
        self.table.clear()


class KeptOnSecondCall(ByIdentity):
    """``fn(*args)`` for callers that may change what they get: the first call for some
    ``args`` hands out what ``fn`` made and remembers only that they were seen; the second
    makes it again and keeps ``keep(out)``, and it and every later call get
    ``copy(kept)``. A call on sections never seen before pays for ``fn`` alone, not for
    ``fn``, a copy plan and a copy; a sweep or a form pays for a copy."""

    __slots__ = ("keep", "copy")

    def __init__(self, fn: Callable, keep: Callable, copy: Callable, maxsize: int = 4096):
        super().__init__(fn, maxsize)
        self.keep, self.copy = keep, copy

    def __call__(self, *args):
        key = tuple(map(id, args))
        hit = self.table.get(key)
        if hit is not None and hit[1] is not None:
            return self.copy(hit[1])
        out = self.fn(*args)
        if len(self.table) >= self.maxsize:
            self.table.clear()
        if hit is None:                   # first sight: the caller owns what was made
            self.table[key] = (args, None)
            return out
        kept = self.keep(out)             # second sight: kept, and the caller gets a copy
        self.table[key] = (args, kept)
        return self.copy(kept)


def forget() -> None:
    """Clear every engine memo (tests and benchmarks measure cold calls with it)."""
    from . import scenario        # its section memos live beside the parsers
    scenario.forget_parsed()
    for m in _ALL:
        m.clear()
