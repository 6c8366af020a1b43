"""The bandwidth scheduler: a step as a task graph, run as a discrete-event simulation.

Vocabulary (after SimGrid's LMM solver): *links* are constraints with a bandwidth bound
(bytes/s); *flows* (transfer tasks) cross one or more links and get a rate; *streams*
run compute tasks one at a time; *pools* hold buffer slots that bound how far ahead a
prefetch may run.

Semantics, which the C extension (``simulation._cscheduler``) reproduces exactly:

* A task becomes ready when all its dependencies have ended. A task that acquires a pool
  slot starts only when one is free (lowest task id first); its release frees a slot of
  the pool it names when it ends.
* A compute task starts when its stream is idle (lowest ready id first) and runs for
  ``duration_s``. A transfer starts as soon as it is ready and moves ``size_bytes``.
* Whenever a flow starts or ends, every active flow's rate is recomputed by max-min fair
  sharing, by progressive filling: repeatedly find the link whose remaining capacity
  divided by its unfrozen flows' weights is smallest, give that share to those flows,
  freeze them and subtract rate x weight from every link they cross (Bertsekas &
  Gallager, *Data Networks*, Sec. 6.5.2). Links are scanned in index order, flows in task
  order.
* A flow's *weight* on a link (``path_weight``, parallel to ``path_links``; 1 when absent)
  is the capacity it uses there per byte it moves: SimGrid's LMM consumption weight
  (``lmm::System::expand(constraint, variable, consumption_weight)``). One link can so
  stand for a resource two kinds of flow share at different costs: an NVMe drive whose
  reads run at R and writes at W is one link of capacity R where a written byte weighs
  R / W, i.e. read_bytes / R + write_bytes / W <= 1 s per second.
  ``link_bytes`` counts the capacity used (bytes x weight).
* Zero-length tasks end the moment they start.

``simulate_reference`` is the specification: short and slow. ``simulate`` uses the C
extension when it is built and falls back to the reference otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

COMPUTE, TRANSFER = 0, 1
_REL = 1e-12


class GraphError(ValueError):
    """A task graph that cannot be simulated (cycle, unknown link, bad size, ...)."""


@dataclass
class TaskGraph:
    """Builder for a task graph; ``arrays()`` flattens it for the simulators."""
    links: dict = field(default_factory=dict)      # name -> index
    link_bw: list = field(default_factory=list)    # bytes/s
    streams: dict = field(default_factory=dict)    # name -> index
    pools: dict = field(default_factory=dict)      # name -> index
    pool_cap: list = field(default_factory=list)
    names: list = field(default_factory=list)
    labels: list = field(default_factory=list)     # compute | allgather | reduce_scatter | ...
    kind: list = field(default_factory=list)
    stream: list = field(default_factory=list)
    duration: list = field(default_factory=list)
    size: list = field(default_factory=list)
    paths: list = field(default_factory=list)
    weights: list = field(default_factory=list)    # per path link: capacity used per byte
    deps: list = field(default_factory=list)
    acquire: list = field(default_factory=list)
    release: list = field(default_factory=list)

    def add_link(self, name: str, bytes_per_s: float) -> int:
        if name in self.links:
            raise GraphError(f"link {name!r} added twice")
        self.links[name] = len(self.link_bw)
        self.link_bw.append(float(bytes_per_s))
        return self.links[name]

    def add_stream(self, name: str) -> int:
        return self.streams.setdefault(name, len(self.streams))

    def add_pool(self, name: str, slots: int) -> int:
        self.pools[name] = len(self.pool_cap)
        self.pool_cap.append(int(slots))
        return self.pools[name]

    def _add(self, name, label, kind, stream, duration, size, path, deps, acquire, release,
             weights=None):
        self.names.append(name)
        self.weights.append([1.0] * len(path) if weights is None else [float(w) for w in weights])
        self.labels.append(label)
        self.kind.append(kind)
        self.stream.append(stream)
        self.duration.append(float(duration))
        self.size.append(float(size))
        self.paths.append(path)
        self.deps.append([int(d) for d in deps if d is not None])
        self.acquire.append(-1 if acquire is None else self.pools[acquire])
        self.release.append(-1 if release is None else self.pools[release])
        return len(self.names) - 1

    def compute(self, name, stream, duration_s, deps=(), acquire=None, release=None,
                label="compute") -> int:
        return self._add(name, label, COMPUTE, self.add_stream(stream), duration_s, 0.0, [],
                         deps, acquire, release)

    def transfer(self, name, size_bytes, path, deps=(), acquire=None, release=None,
                 label="transfer", weights=None) -> int:
        """A flow of ``size_bytes`` over the links named in ``path``; ``weights`` (one per
        link, default 1) is the capacity of each link it uses per byte."""
        try:
            idx = [self.links[p] for p in path]
        except KeyError as e:
            raise GraphError(f"task {name!r}: unknown link {e.args[0]!r}") from None
        if weights is not None and len(weights) != len(path):
            raise GraphError(f"task {name!r}: {len(weights)} weights for {len(path)} links")
        return self._add(name, label, TRANSFER, -1, 0.0, size_bytes, idx, deps, acquire, release,
                         weights)

    def arrays(self) -> dict:
        """Flat arrays (CSR for paths and dependencies) for the simulators."""
        def csr(rows):
            ptr = np.zeros(len(rows) + 1, dtype=np.int32)
            ptr[1:] = np.cumsum([len(r) for r in rows])
            flat = np.array([x for r in rows for x in r], dtype=np.int32)
            return ptr, flat
        path_ptr, path_links = csr(self.paths)
        dep_ptr, dep_idx = csr(self.deps)
        path_weight = np.array([w for r in self.weights for w in r], dtype=np.float64)
        return dict(
            link_bw=np.array(self.link_bw, dtype=np.float64),
            n_streams=len(self.streams),
            pool_cap=np.array(self.pool_cap, dtype=np.int32),
            kind=np.array(self.kind, dtype=np.int32),
            stream=np.array(self.stream, dtype=np.int32),
            duration=np.array(self.duration, dtype=np.float64),
            size=np.array(self.size, dtype=np.float64),
            path_ptr=path_ptr, path_links=path_links, path_weight=path_weight,
            dep_ptr=dep_ptr, dep_idx=dep_idx,
            acquire=np.array(self.acquire, dtype=np.int32),
            release=np.array(self.release, dtype=np.int32))


@dataclass
class Schedule:
    start_s: np.ndarray
    end_s: np.ndarray
    link_busy_s: np.ndarray
    link_bytes: np.ndarray
    stream_busy_s: np.ndarray
    makespan_s: float


def validate(a: dict) -> None:
    """Raise GraphError for graphs neither simulator may run."""
    n = len(a["kind"])
    nl, ns, npool = len(a["link_bw"]), a["n_streams"], len(a["pool_cap"])
    bw = a["link_bw"]
    if np.any(~np.isfinite(bw)) or np.any(bw <= 0):
        i = int(np.flatnonzero(~np.isfinite(bw) | (bw <= 0))[0])
        raise GraphError(f"link {i} has bandwidth {bw[i]!r}; it must be > 0")
    if np.any(a["pool_cap"] < 1):
        raise GraphError("every pool needs at least one slot")
    for name in ("duration", "size"):
        v = a[name]
        bad = ~np.isfinite(v) | (v < 0)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise GraphError(f"task {i} has {name} {v[i]!r}; it must be finite and >= 0")
    for i in range(n):
        if a["kind"][i] == COMPUTE and not 0 <= a["stream"][i] < ns:
            raise GraphError(f"task {i} names unknown stream {a['stream'][i]}")
        if a["kind"][i] == TRANSFER:
            lo, hi = a["path_ptr"][i], a["path_ptr"][i + 1]
            if hi == lo:
                raise GraphError(f"transfer task {i} crosses no link")
            links = a["path_links"][lo:hi]
            if np.any((links < 0) | (links >= nl)):
                raise GraphError(f"transfer task {i} names an unknown link")
        for p in (a["acquire"][i], a["release"][i]):
            if not -1 <= p < npool:
                raise GraphError(f"task {i} names unknown pool {p}")
    w = path_weights(a)
    if len(w) != len(a["path_links"]) or np.any(~np.isfinite(w)) or np.any(w <= 0):
        raise GraphError("path_weight must hold one finite weight > 0 per path link")
    deps = a["dep_idx"]
    if np.any((deps < 0) | (deps >= n)):
        raise GraphError("a dependency names an unknown task")
    # Kahn's algorithm: a graph with a cycle never finishes.
    indeg = np.diff(a["dep_ptr"]).astype(np.int64)
    succ = [[] for _ in range(n)]
    for i in range(n):
        for d in deps[a["dep_ptr"][i]:a["dep_ptr"][i + 1]]:
            succ[d].append(i)
    stack = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while stack:
        i = stack.pop()
        seen += 1
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                stack.append(j)
    if seen != n:
        raise GraphError("the task graph has a dependency cycle")


def path_weights(a: dict) -> np.ndarray:
    """``a["path_weight"]``, or ones (every flow uses a byte of capacity per byte)."""
    w = a.get("path_weight")
    return np.ones(len(a["path_links"])) if w is None else np.asarray(w, dtype=np.float64)


def max_min_rates(flows: list, paths: list, cap: np.ndarray, weights: list | None = None) -> dict:
    """Max-min fair rates of ``flows`` (task ids, ascending) by progressive filling;
    ``weights[f]`` (parallel to ``paths[f]``, default ones) is what flow f uses of each
    link per byte."""
    if weights is None:
        weights = [[1.0] * len(p) for p in paths]
    rem = cap.astype(np.float64).copy()
    count = np.zeros(len(cap), dtype=np.int64)
    wsum = np.zeros(len(cap), dtype=np.float64)
    for f in flows:
        for l, w in zip(paths[f], weights[f]):
            count[l] += 1
            wsum[l] += w
    rate, frozen = {}, set()
    while len(frozen) < len(flows):
        best = math.inf
        for l in range(len(cap)):
            if count[l] > 0:
                best = min(best, rem[l] / wsum[l])
        for l in range(len(cap)):
            if count[l] > 0 and rem[l] / wsum[l] <= best * (1 + _REL):
                for f in flows:
                    if f not in frozen and l in paths[f]:
                        rate[f] = best
                        frozen.add(f)
                        for k, w in zip(paths[f], weights[f]):
                            rem[k] -= best * w
                            count[k] -= 1
                            wsum[k] -= w
    return rate


def simulate_reference(a: dict) -> Schedule:
    """Run the graph in ``a`` (from ``TaskGraph.arrays``); the specification."""
    validate(a)
    n, nl = len(a["kind"]), len(a["link_bw"])
    paths = [list(a["path_links"][a["path_ptr"][i]:a["path_ptr"][i + 1]]) for i in range(n)]
    pw = path_weights(a)
    weights = [list(pw[a["path_ptr"][i]:a["path_ptr"][i + 1]]) for i in range(n)]
    waiting = [int(a["dep_ptr"][i + 1] - a["dep_ptr"][i]) for i in range(n)]
    succ = [[] for _ in range(n)]
    for i in range(n):
        for d in a["dep_idx"][a["dep_ptr"][i]:a["dep_ptr"][i + 1]]:
            succ[d].append(i)
    free = list(a["pool_cap"])
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    remaining = a["size"].astype(np.float64).copy()
    stream_task = [-1] * a["n_streams"]
    link_busy = np.zeros(nl)
    link_bytes = np.zeros(nl)
    stream_busy = np.zeros(a["n_streams"])
    ready = sorted(i for i in range(n) if waiting[i] == 0)
    running_flows: list = []
    now, done = 0.0, 0

    def finish(i):
        nonlocal done
        end[i] = now
        done += 1
        if a["release"][i] >= 0:
            free[a["release"][i]] += 1
        for j in succ[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)

    while done < n:
        # Start what can start, lowest id first; zero-length tasks end at once.
        progressed = True
        while progressed:
            progressed = False
            ready.sort()
            for i in list(ready):
                p = a["acquire"][i]
                if p >= 0 and free[p] == 0:
                    continue
                if a["kind"][i] == COMPUTE:
                    s = a["stream"][i]
                    if stream_task[s] != -1:
                        continue
                ready.remove(i)
                if p >= 0:
                    free[p] -= 1
                start[i] = now
                progressed = True
                if a["kind"][i] == COMPUTE:
                    if a["duration"][i] == 0:
                        finish(i)
                    else:
                        stream_task[a["stream"][i]] = i
                        stream_busy[a["stream"][i]] += a["duration"][i]
                elif remaining[i] == 0:
                    finish(i)
                else:
                    running_flows.append(i)
                break   # re-sort: a finish may have made a lower id ready
        if done == n:
            break
        running_flows.sort()
        rates = max_min_rates(running_flows, paths, a["link_bw"], weights)
        t_next = math.inf
        for s, i in enumerate(stream_task):
            if i != -1:
                t_next = min(t_next, start[i] + a["duration"][i])
        for f in running_flows:
            t_next = min(t_next, now + remaining[f] / rates[f])
        if t_next == math.inf:
            raise GraphError("no task can make progress (pool slots never released?)")
        dt = t_next - now
        tol = _REL * max(1.0, t_next) * 1e3
        busy = np.zeros(nl, dtype=bool)
        for f in running_flows:
            moved = rates[f] * dt
            for l, w in zip(paths[f], weights[f]):
                busy[l] = True
                link_bytes[l] += moved * w
            remaining[f] -= moved
        link_busy[busy] += dt
        now = t_next
        for s, i in enumerate(stream_task):
            if i != -1 and start[i] + a["duration"][i] <= now + tol:
                stream_task[s] = -1
                finish(i)
        for f in list(running_flows):
            if now + remaining[f] / rates[f] <= now + tol or remaining[f] <= 0:
                remaining[f] = 0.0
                running_flows.remove(f)
                finish(f)
    return Schedule(start, end, link_busy, link_bytes, stream_busy,
                    float(np.nanmax(end)) if n else 0.0)


try:                  # looked up once, not per simulation
    from . import _cscheduler
except ImportError:
    _cscheduler = None


def simulate(a: dict, engine: str = "auto") -> Schedule:
    """Simulate with the C extension (``engine="c"``), the reference (``"python"``) or
    whichever is available (``"auto"``)."""
    if engine in ("auto", "c"):
        if _cscheduler is None:
            if engine == "c":
                raise ImportError("simulation._cscheduler is not built")
        else:   # the C code checks the graph itself
            n, nl, ns = len(a["kind"]), len(a["link_bw"]), a["n_streams"]
            out = dict(start=np.empty(n), end=np.empty(n), link_busy=np.zeros(nl),
                       link_bytes=np.zeros(nl), stream_busy=np.zeros(ns))
            makespan = _cscheduler.simulate(
                a["link_bw"], ns, a["pool_cap"], a["kind"], a["stream"], a["duration"],
                a["size"], a["path_ptr"], a["path_links"], a["dep_ptr"], a["dep_idx"],
                a["acquire"], a["release"], out["start"], out["end"], out["link_busy"],
                out["link_bytes"], out["stream_busy"], path_weights(a))
            return Schedule(out["start"], out["end"], out["link_busy"], out["link_bytes"],
                            out["stream_busy"], makespan)
    return simulate_reference(a)
