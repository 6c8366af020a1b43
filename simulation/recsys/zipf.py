"""Zipf(alpha) over a table's rows: harmonic numbers, hit rates, distinct rows, a sampler.

Row of rank i (1 = hottest) of an n-row table is looked up with probability
p_i = i^-alpha / H(n, alpha), where H(n, alpha) = sum_{k=1}^{n} k^-alpha is the
generalized harmonic number. alpha = 0 is uniform; alpha = 1 is classic Zipf.

* A tier holding ranks a+1..b serves the share (H(b) - H(a)) / H(n) of the lookups.
* :func:`harmonic` sums the first ``EXACT_TERMS`` terms exactly and the rest by
  Euler-Maclaurin (Abramowitz & Stegun 23.1.30) with the B2 and B4 terms; for alpha > 1
  this equals zeta(alpha) - zeta(alpha, n + 1) (Hurwitz zeta). The next term is below
  1e-22 relative for m = 4096, so the result is exact to float precision.
* :func:`expected_distinct`: k independent lookups touch sum_i 1 - (1 - p_i)^k distinct
  rows (linearity of expectation over the indicator "row i is drawn at least once").
* :func:`sample` draws ranks exactly on the finite support {1..n} by rejection-inversion
  (Hoermann & Derflinger, ACM TOMACS 6(3), 1996; as Apache Commons RNG's
  RejectionInversionZipfSampler), O(1) memory even for 40M-row tables. It is the
  independent check of the closed forms (never ``np.random.zipf``: unbounded support).
"""

from __future__ import annotations

import math

import numpy as np

EXACT_TERMS = 4096          # exact head of every harmonic sum
DISTINCT_EXACT_ROWS = 1 << 20   # expected_distinct sums exactly up to this many rows
_SIMPSON_INTERVALS = 4096


def _head(m: int, alpha: float) -> float:
    return float(np.sum(np.arange(1, m + 1, dtype=np.float64) ** -alpha))


def _integral(a: float, b: float, alpha: float) -> float:
    """int_a^b x^-alpha dx, without cancellation near alpha = 1."""
    if alpha == 1.0:
        return math.log(b / a)
    e = 1.0 - alpha
    return a ** e * math.expm1(e * math.log(b / a)) / e


def harmonic(n: float, alpha: float) -> float:
    """H(n, alpha) = sum_{k=1}^{n} k^-alpha for integer n >= 0, alpha >= 0."""
    n = int(n)
    if n <= 0:
        return 0.0
    if alpha == 0.0:
        return float(n)
    m = min(n, EXACT_TERMS)
    head = _head(m, alpha)
    if n == m:
        return head
    # sum_{k=m+1}^{n} f(k) = int_m^n f + (f(n) - f(m))/2 + B2/2! (f'(n) - f'(m))
    #                       + B4/4! (f'''(n) - f'''(m)) + R,   f(x) = x^-alpha
    f = lambda x: x ** -alpha                                           # noqa: E731
    d1 = lambda x: -alpha * x ** (-alpha - 1)                           # noqa: E731
    d3 = lambda x: -alpha * (alpha + 1) * (alpha + 2) * x ** (-alpha - 3)  # noqa: E731
    tail = (_integral(m, n, alpha) + (f(n) - f(m)) / 2 + (d1(n) - d1(m)) / 12
            - (d3(n) - d3(m)) / 720)
    return head + tail


def hit_rate(a: float, b: float, n: float, alpha: float) -> float:
    """Share of lookups that fall on ranks a+1..b of an n-row table."""
    a, b = int(min(a, n)), int(min(b, n))
    if b <= a:
        return 0.0
    return (harmonic(b, alpha) - harmonic(a, alpha)) / harmonic(n, alpha)


def _touched(p: np.ndarray, k: float) -> np.ndarray:
    """P(a row of probability p is drawn at least once in k draws) = 1 - (1 - p)^k."""
    return -np.expm1(k * np.log1p(-np.minimum(p, 1.0 - 1e-300)))


def expected_distinct(k: float, n: float, alpha: float) -> float:
    """Expected number of distinct rows among k independent Zipf(alpha) lookups.

    Exact sum for n <= ``DISTINCT_EXACT_ROWS``; above, exact over the first
    ``DISTINCT_EXACT_ROWS`` ranks and, for the smooth tail, the integral (Simpson on
    u = ln x) plus the Euler-Maclaurin end correction. alpha = 0: n (1 - (1 - 1/n)^k).
    """
    return expected_distinct_many([k], n, alpha)[0]


def expected_distinct_many(ks, n: float, alpha: float) -> list:
    """:func:`expected_distinct` for several lookup counts ``ks`` of one table: the row
    probabilities (the costly part) are computed once."""
    n = int(n)
    out = [0.0] * len(ks)
    todo = [i for i, k in enumerate(ks) if k > 0 and n > 0]
    if not todo:
        return out
    if alpha == 0.0:
        for i in todo:
            out[i] = float(n * _touched(np.array(1.0 / n), ks[i]))
        return out
    h = harmonic(n, alpha)
    m = min(n, DISTINCT_EXACT_ROWS)
    logq = np.log1p(-np.minimum(np.arange(1, m + 1, dtype=np.float64) ** -alpha / h, 1.0 - 1e-300))
    if n > m:
        u = np.linspace(math.log(m), math.log(n), _SIMPSON_INTERVALS + 1)
        x = np.exp(u)
        tail_logq = np.log1p(-np.minimum(x ** -alpha / h, 1.0 - 1e-300))
        w = np.ones_like(u)
        w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    for i in todo:
        k = ks[i]
        head = float(np.sum(-np.expm1(k * logq)))
        if n == m:
            out[i] = head
            continue
        y = -np.expm1(k * tail_logq)
        integral = float(np.sum(w * y * x)) * (u[1] - u[0]) / 3
        out[i] = head + integral + float(y[-1] - (-np.expm1(k * logq[-1]))) / 2
    return out


# ------------------------------------------------------------------ the sampler
def _helper1(x):
    """log1p(x) / x, 1 at 0."""
    x = np.asarray(x, dtype=np.float64)
    small = np.abs(x) < 1e-8
    safe = np.where(small, 1.0, x)
    return np.where(small, 1 - x / 2 + x * x / 3, np.log1p(safe) / safe)


def _helper2(x):
    """expm1(x) / x, 1 at 0."""
    x = np.asarray(x, dtype=np.float64)
    small = np.abs(x) < 1e-8
    safe = np.where(small, 1.0, x)
    return np.where(small, 1 + x / 2 + x * x / 6, np.expm1(safe) / safe)


def sample(n: int, alpha: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` ranks in 1..n drawn from Zipf(alpha) on that finite support."""
    n = int(n)
    if alpha == 0.0 or n == 1:
        return rng.integers(1, n + 1, size=size)
    e = 1.0 - alpha
    h = lambda x: np.exp(-alpha * np.log(x))                       # noqa: E731
    hint = lambda x: _helper2(e * np.log(x)) * np.log(x)           # int_1^x t^-alpha dt
    hinv = lambda y: np.exp(_helper1(np.maximum(y * e, -1.0)) * y)  # its inverse  # noqa: E731
    hx1, hn = hint(1.5) - 1.0, hint(n + 0.5)
    s = 2.0 - hinv(hint(2.5) - h(2.0))
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        u = hn + rng.random(todo.size) * (hx1 - hn)
        x = hinv(u)
        k = np.clip(np.floor(x + 0.5), 1, n)
        ok = (k - x <= s) | (u >= hint(k + 0.5) - h(k))
        out[todo[ok]] = k[ok].astype(np.int64)
        todo = todo[~ok]
    return out
