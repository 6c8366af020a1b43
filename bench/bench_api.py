"""API load benchmark: it prints figures measured in one run; it never passes or fails.

    python bench/bench_api.py                  # about a minute
    python bench/bench_api.py --duration 5     # shorter phases
    python bench/bench_api.py --use-env        # DATABASE_URL / CELERY_BROKER_URL from the environment

Starts gunicorn (``--workers``, default 2) and one Celery worker on 127.0.0.1, by default on a
fresh SQLite database and filesystem broker in a temporary folder (``--use-env``: the
environment's database and broker, which it migrates and writes benchmark rows to), with
DEBUG=0 as in production. Then, with ``--clients`` (default 32) concurrent HTTP clients
(httpx, asyncio, one connection each) for ``--duration`` seconds per phase:

1. ``POST /api/v1/estimate/`` (the live estimate, memory only);
2. one run at a time through the warm worker: POST a run, poll it until it succeeded
   (round trip as the client sees it, and created -> finished on the server);
3. ``POST /api/v1/scenarios/{id}/runs/`` of an identical input (reuses the stored result);
4. ``POST /api/v1/scenarios/{id}/runs/`` of a new input each time (queued for the worker).

5. sweeps through gunicorn + Celery (``--sweep-points``, default 400 and 10,000): a worker with
   ``--sweep-workers`` pool processes (default 2) replaces the first one; each sweep is POSTed
   and its list row polled until it succeeded (end to end, as a client sees it), and the same
   points are run by the engine alone (``simulation.sweep.run``, no Django in the loop) in
   one process for its own rate, and split over ``--sweep-workers`` processes started together:
   the sweep's points/s over (processes x the one-process rate) is the share of the engine's
   rate per worker process the web stack delivers; over the parallel engine's points/s, the
   same share with the processes competing for the same cores as the workers do.

Prints requests/s, latency percentiles and errors per phase, and beside each the machine's
load while it ran: the 1-minute load average before -> after and the CPU cores that processes
other than the benchmark's own (server, worker, this client) kept busy, plus the hypervisor's
steal (``elsewhere``). Tail latency measured while other work holds the cores is the wait for
a CPU, not the server's: compare figures only from runs with ``elsewhere`` near 0. Only
loopback is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
import copy, json, sys
import django
django.setup()
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from tierlab.catalog.loader import load_catalog
from tierlab.scenarios.examples import examples
from tierlab.scenarios.models import Scenario
load_catalog(keep_existing=True)
user, _ = get_user_model().objects.get_or_create(username="bench")
token, _ = Token.objects.get_or_create(user=user)
spec = examples()[2]["scenario"]
count = int(sys.argv[1])
variants = []
for i in range(count):
    s = copy.deepcopy(spec)
    s["training"]["seq_len"] = 256 + i          # a new input hash per scenario
    variants.append(Scenario(owner=user, name=f"bench {i}", spec=s))
ids = [s.pk for s in Scenario.objects.bulk_create(variants)]
same = Scenario.objects.create(owner=user, name="bench same", spec=spec)
print(json.dumps({"token": token.key, "spec": spec, "ids": ids, "same": same.pk}))
"""


# The engine alone on points start..stop-1 of a sweep's grid, in one process: it says "ready"
# once warm, waits for a line on stdin (so that parallel copies start together), then prints
# {points, wall_s, cpu_s, valid}.
ENGINE_SWEEP = """
import json, sys, time
import django
django.setup()
from simulation import sweep
from tierlab.catalog.lookups import catalog_lookups
base, axes, start, stop = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lookups = catalog_lookups()
warm = [{"path": "training.seq_len", "values": [100 + i for i in range(10)]}]   # not in the grid
sweep.run(sweep.expand(base, warm), **lookups)          # imports and the catalog, as a warm worker has them
points = sweep.expand(base, axes, start, stop)
print("ready", flush=True)
sys.stdin.readline()
wall, cpu = time.perf_counter(), time.process_time()
results = sweep.run(points, **lookups)
print(json.dumps({"points": len(points), "wall_s": time.perf_counter() - wall,
                  "cpu_s": time.process_time() - cpu, "valid": sum(r["valid"] for r in results)}))
"""


# A sweep's list row is read this often, the UI's first cadence (frontend poll: 0.5 s, backing
# off); its end is taken from the row's finished_at, so the cadence does not round it, and
# the reads (~7 ms of server CPU each) load the workers' cores as one watching user would.
POLL_S = 0.5


def sweep_axes(points: int) -> list[dict]:
    """A grid of ``points`` distinct valid inputs on the benchmark's scenario (7B, one GPU,
    micro batch 1: any global batch divides): sequence lengths x global batches, as square
    as ``points`` allows."""
    rows = next(r for r in range(int(points ** 0.5), 0, -1) if points % r == 0)
    return [{"path": "training.seq_len", "values": [256 + 16 * i for i in range(rows)]},
            {"path": "training.global_batch_size", "values": list(range(1, points // rows + 1))}]


def children_cpu_s() -> float:
    """This process's CPU seconds and those of the children it waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def engine_rate(python, env, spec, axes, processes: int = 1) -> dict:
    """The engine alone on the grid's points, split into ``processes`` equal parts run at
    once by as many processes (started together once all are warm): points/s over the
    slowest part's wall time, CPU seconds summed."""
    total = 1
    for ax in axes:
        total *= len(ax["values"])
    bounds = [(k * total // processes, (k + 1) * total // processes) for k in range(processes)]
    procs = [subprocess.Popen([python, "-c", ENGINE_SWEEP, json.dumps(spec), json.dumps(axes), str(a), str(b)],
                              cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for a, b in bounds]
    for proc in procs:
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit("the engine's sweep process did not start")
    with HostLoad(children_cpu_s) as load:
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outs = [json.loads(proc.communicate()[0].strip().splitlines()[-1]) for proc in procs]
    wall = max(o["wall_s"] for o in outs)
    return {"points": total, "wall_s": wall, "cpu_s": sum(o["cpu_s"] for o in outs), "processes": processes,
            "points_per_s": total / wall, "load": load}


async def drain_runs(make_client, timeout_s: float = 300.0) -> int:
    """Wait until no run is queued or running (the queued-runs phase leaves its runs in the
    broker, and a sweep's chunks would wait behind them); returns how many were open at first."""
    http = make_client()
    first = None
    deadline = time.perf_counter() + timeout_s
    try:
        while True:
            open_runs = 0
            for state in ("queued", "running"):
                body = json.loads((await http.request("GET", f"/api/v1/runs/?status={state}"))[1])
                open_runs += body.get("count", len(body.get("results", [])))
            first = open_runs if first is None else first
            if open_runs == 0 or time.perf_counter() > deadline:
                return first
            await asyncio.sleep(0.5)
    finally:
        http.close()


async def sweep_end_to_end(make_client, scenario_id, axes, name) -> dict:
    """POST the sweep, poll its (light) list row until it ends: ``elapsed_s`` from the POST to
    the row's ``finished_at`` (the server's clock, this machine's), ``seen_s`` to the poll that
    saw it end."""
    http = make_client()
    body = json.dumps({"scenario": scenario_id, "axes": axes, "name": name}).encode()
    worker_cpu, server_cpu = group_cpu_s(WORKER_PGID), group_cpu_s(SERVER_PGID)
    with HostLoad(benchmark_cpu_s) as load:
        started, started_wall = time.perf_counter(), time.time()
        status, answer = await http.request("POST", "/api/v1/sweeps/", body)
        posted = time.perf_counter() - started
        if status != 202:
            http.close()
            raise SystemExit(f"sweep {name}: HTTP {status} {answer[:300]!r}")
        sweep = json.loads(answer)
        row = {"status": sweep["status"]}
        while row["status"] not in ("succeeded", "failed", "cancelled"):
            await asyncio.sleep(POLL_S)
            rows = json.loads((await http.request("GET", f"/api/v1/sweeps/?q={name}"))[1])["results"]
            row = next(r for r in rows if r["id"] == sweep["id"])
        seen = time.perf_counter() - started
    finished = row.get("finished_at")
    elapsed = (datetime.fromisoformat(finished.replace("Z", "+00:00")).timestamp() - started_wall
               if finished else seen)
    worker_cpu, server_cpu = group_cpu_s(WORKER_PGID) - worker_cpu, group_cpu_s(SERVER_PGID) - server_cpu
    detail = json.loads((await http.request("GET", f"/api/v1/sweeps/{sweep['id']}/"))[1])
    http.close()
    done = sum(p["status"] == "done" and p.get("valid", False) for p in detail["points"])
    return {"points": sweep["total_points"], "chunks": sweep["chunks"], "status": row["status"],
            "elapsed_s": elapsed, "seen_s": seen, "post_s": posted, "valid_done": done, "load": load,
            "worker_cpu_s": worker_cpu, "server_cpu_s": server_cpu}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) used so far by the processes of a process group."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:                 # field 5 of stat: process group
            total += int(fields[11]) + int(fields[12])
    return total / tick


def own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def machine_cpu_s() -> tuple[float, float]:
    """(busy, steal): CPU seconds the whole machine spent busy (user, nice, system, irq,
    softirq; guest time is inside user) and stolen by the hypervisor, since boot
    (``/proc/stat``, all cores summed)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not Linux
        return os.cpu_count() or 1


class HostLoad:
    """What else the machine did during a ``with`` block: the 1-minute load average before
    and after, and the cores kept busy by processes other than the benchmark's own
    (``ours()``: CPU seconds of its processes) and stolen by the hypervisor, averaged over
    the block (``elsewhere_cores = other_cores + steal_cores``)."""

    def __init__(self, ours=own_cpu_s):
        self.ours = ours
        self.load_before = self.load_after = float("nan")
        self.other_cores = self.steal_cores = float("nan")
        self.cores = usable_cores()

    def __enter__(self):
        self.load_before = os.getloadavg()[0]
        self._start = (time.perf_counter(), *machine_cpu_s(), self.ours())
        return self

    def __exit__(self, *exc):
        now, busy, steal, ours = time.perf_counter(), *machine_cpu_s(), self.ours()
        elapsed = max(now - self._start[0], 1e-9)
        own = ours - self._start[3]
        self.other_cores = max(0.0, busy - self._start[1] - own) / elapsed
        self.steal_cores = (steal - self._start[2]) / elapsed
        self.load_after = os.getloadavg()[0]
        return False

    @property
    def elsewhere_cores(self) -> float:
        return self.other_cores + self.steal_cores

    def columns(self) -> str:
        return f"{self.load_before:>5.1f} ->{self.load_after:>5.1f} {self.elsewhere_cores:>9.2f}"

    def describe(self) -> str:
        return (f"load average (1 min) {self.load_before:.2f} -> {self.load_after:.2f} on {self.cores} cores; "
                f"{self.other_cores:.2f} cores busy in other processes, {self.steal_cores:.2f} stolen "
                f"by the hypervisor")

    @property
    def busy(self) -> bool:
        """Other work took a quarter of a core or more: latency figures include its queueing."""
        return self.elsewhere_cores >= 0.25


class Result:
    def __init__(self, name):
        self.name, self.latencies, self.errors, self.elapsed, self.codes = name, [], 0, 0.0, {}
        self.server_cpu = self.client_cpu = None
        self.load = None            # HostLoad while the phase ran

    def add(self, seconds, status):
        self.codes[status] = self.codes.get(status, 0) + 1
        if 200 <= status < 300:
            self.latencies.append(seconds)
        else:
            self.errors += 1

    def row(self):
        lat = sorted(self.latencies)
        ms = lambda q: percentile(lat, q) * 1e3  # noqa: E731
        rps = len(lat) / self.elapsed if self.elapsed else float("nan")
        load = f" {self.load.columns()}" if self.load else ""
        return (f"{self.name:<44} {len(lat):>7} {rps:>8.1f} {ms(50):>8.1f} {ms(90):>8.1f} "
                f"{ms(99):>8.1f} {(lat[-1] * 1e3 if lat else float('nan')):>8.1f} {self.errors:>6}{load}")

    def percentile_ms(self, q) -> float:
        return percentile(sorted(self.latencies), q) * 1e3


SERVER_PGID = WORKER_PGID = 0          # gunicorn's and the worker's process groups, once they run


def benchmark_cpu_s() -> float:
    """CPU seconds of the benchmark's own processes: gunicorn, the worker and this client."""
    return sum(group_cpu_s(p) for p in (SERVER_PGID, WORKER_PGID) if p) + own_cpu_s()


HEADER = (f"{'phase':<44} {'ok':>7} {'req/s':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} "
          f"{'max ms':>8} {'errors':>6} {'load 1m':>12} {'elsewhere':>9}")


class RawHTTP:
    """A minimal HTTP/1.1 client on asyncio streams: one connection, kept alive when the
    server allows (gthread), reopened when it closes it (sync workers). On a 2-core machine
    the load generator shares the CPU with the server; httpx spends about as much CPU per
    request as the server does, this about a third of that (see the CPU lines printed)."""

    def __init__(self, url: str, headers: dict):
        host_port = url.split("://", 1)[1]
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)
        self.head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": host_port, **headers}.items())
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        for attempt in (0, 1):
            fresh = self.writer is None
            if fresh:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            self.writer.write(f"{method} {path} HTTP/1.1\r\n{self.head}Content-Length: {len(body)}"
                              f"\r\n\r\n".encode() + body)
            status_line = await self.reader.readline()
            if status_line or fresh:
                break
            self.close()                      # a kept-alive connection the server had closed
        status, length, chunked, close = int(status_line.split()[1]), None, False, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and value == b"chunked":
                chunked = True
            elif name == b"connection" and value == b"close":
                close = True
        if chunked:
            data = b""
            while size := int((await self.reader.readline()).split(b";")[0], 16):
                data += await self.reader.readexactly(size)
                await self.reader.readline()
            await self.reader.readline()
        elif length is not None:
            data = await self.reader.readexactly(length)
        else:
            data, close = await self.reader.read(), True
        if close:
            self.close()
        return status, data

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class HttpxHTTP:
    """The same interface on httpx (``--client httpx``)."""

    def __init__(self, url: str, headers: dict):
        import httpx

        self.url, self.http = url, httpx.AsyncClient(headers=headers, timeout=30)

    async def request(self, method, path, body=b""):
        response = await self.http.request(method, self.url + path, content=body)
        return response.status_code, response.content

    def close(self):
        pass


CLIENTS = {"raw": RawHTTP, "httpx": HttpxHTTP}


async def hammer(name, make_client, clients, duration, body_for):
    """``clients`` concurrent loops, each on its own connection, for ``duration`` seconds."""
    result = Result(name)
    deadline = time.perf_counter() + duration

    async def client(n):
        http, i = make_client(), n
        while time.perf_counter() < deadline:
            path, body = body_for(i)
            i += clients
            started = time.perf_counter()
            try:
                status, _ = await http.request("POST", path, body)
            except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                status = 0
                http.close()
            result.add(time.perf_counter() - started, status)
        http.close()

    started, server_cpu, client_cpu = time.perf_counter(), group_cpu_s(SERVER_PGID), own_cpu_s()
    with HostLoad(benchmark_cpu_s) as result.load:
        await asyncio.gather(*(client(n) for n in range(clients)))
    result.elapsed = time.perf_counter() - started
    result.server_cpu = group_cpu_s(SERVER_PGID) - server_cpu
    result.client_cpu = own_cpu_s() - client_cpu
    return result


async def round_trips(make_client, scenario_ids, count):
    """Runs one at a time through the idle worker; client-side and server-side times."""

    client_side, server_side = Result("run round trip, client POST -> succeeded"), []
    http = make_client()
    started_all = time.perf_counter()
    client_side.load = HostLoad(benchmark_cpu_s).__enter__()
    for scenario_id in scenario_ids[:count]:
        started = time.perf_counter()
        status, body = await http.request("POST", f"/api/v1/scenarios/{scenario_id}/runs/")
        if status != 202:
            print(f"run of scenario {scenario_id}: HTTP {status} {body[:300]!r}", file=sys.stderr)
            client_side.add(time.perf_counter() - started, status)
            continue
        run = json.loads(body)
        while run["status"] not in ("succeeded", "failed"):
            await asyncio.sleep(0.005)
            run = json.loads((await http.request("GET", f"/api/v1/runs/{run['id']}/"))[1])
        client_side.add(time.perf_counter() - started, 200 if run["status"] == "succeeded" else 500)
        if run["finished_at"] and run["created_at"]:
            server_side.append((datetime.fromisoformat(run["finished_at"])
                                - datetime.fromisoformat(run["created_at"])).total_seconds())
    client_side.load.__exit__(None, None, None)
    client_side.elapsed = time.perf_counter() - started_all
    http.close()
    return client_side, server_side


def start(cmd, env, log_path):
    log = open(log_path, "wb")
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_http(url, proc, log_path, timeout=60):
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            urllib.request.urlopen(url + "/healthz", timeout=2)
            return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"gunicorn did not answer /healthz:\n{Path(log_path).read_text()[-3000:]}")


def wait_log(text, proc, log_path, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if text in Path(log_path).read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise SystemExit(f"worker did not start:\n{Path(log_path).read_text()[-3000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per load phase")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--worker-class", default="sync", help="gunicorn worker class")
    parser.add_argument("--threads", type=int, default=1, help="threads per gthread worker")
    parser.add_argument("--conn-max-age", type=int, default=60,
                        help="DB_CONN_MAX_AGE: seconds a database connection is reused (0: per request)")
    parser.add_argument("--round-trips", type=int, default=20)
    parser.add_argument("--client", choices=sorted(CLIENTS), default="raw",
                        help="load generator: raw asyncio HTTP/1.1 (light) or httpx")
    parser.add_argument("--use-env", action="store_true",
                        help="use DATABASE_URL / CELERY_BROKER_URL from the environment")
    parser.add_argument("--sweep-points", default="400,10000",
                        help="comma-separated sweep sizes to run end to end (empty: none)")
    parser.add_argument("--sweep-workers", type=int, default=2,
                        help="Celery pool processes for the sweeps (SWEEP_WORKERS)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and logs")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="tierlab-bench-"))
    queue = f"tierlab-bench-{secrets.token_hex(4)}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TIERLAB_TEST_")}
    env.update(DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="127.0.0.1",
               DB_CONN_MAX_AGE=str(args.conn_max_age), TIERLAB_RUN_QUEUE=queue, DJANGO_SETTINGS_MODULE="tierlab.settings",
               PYTHONUNBUFFERED="1", LOG_LEVEL="WARNING", VITE_DEV_MODE="1",
               SWEEP_WORKERS=str(args.sweep_workers))
    # a load test measures the server, not its rate limits (README: THROTTLE_*_RATE) or the
    # per-user limits on active jobs (MAX_ACTIVE_*_PER_USER: 0 is none)
    env.update({k: "off" for k in ("THROTTLE_ANON_RATE", "THROTTLE_USER_RATE", "THROTTLE_ESTIMATE_RATE",
                                   "THROTTLE_RUNS_RATE", "THROTTLE_SWEEPS_RATE", "THROTTLE_PLANS_RATE",
                                   "THROTTLE_SHARED_RATE")})
    env.update(MAX_ACTIVE_RUNS_PER_USER="0", MAX_ACTIVE_SWEEPS_PER_USER="0", MAX_ACTIVE_PLANS_PER_USER="0")
    env.pop("SWEEP_CHUNK_POINTS", None)            # chunks as the web side sizes them
    sweep_sizes = [int(x) for x in args.sweep_points.split(",") if x.strip()]
    if not args.use_env:
        env.pop("DATABASE_URL", None)
        env.pop("CELERY_BROKER_URL", None)
        env.update(TIERLAB_VAR_DIR=str(tmp / "var"))
    python = sys.executable
    procs = []
    with HostLoad() as quiet:      # the machine before the benchmark starts anything
        time.sleep(1.0)
    try:
        subprocess.run([python, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env,
                       check=True)
        phase_count = int(args.duration * 400) + args.round_trips + 100   # enough new inputs
        setup = json.loads(subprocess.run([python, "-c", SETUP, str(phase_count)], cwd=ROOT, env=env,
                                          check=True, capture_output=True, text=True).stdout)
        token, ids = setup["token"], setup["ids"]

        port = free_port()
        url = f"http://127.0.0.1:{port}"
        gunicorn = [python, "-m", "gunicorn", "tierlab.wsgi", "--bind", f"127.0.0.1:{port}",
                    "--workers", str(args.workers), "--worker-class", args.worker_class,
                    "--threads", str(args.threads), "--backlog", "2048"]
        procs.append(start(gunicorn, env, tmp / "gunicorn.log"))
        global SERVER_PGID
        SERVER_PGID = procs[-1].pid
        wait_http(url, procs[-1], tmp / "gunicorn.log")
        worker = [python, "-m", "celery", "-A", "tierlab", "worker", "--pool", "prefork",
                  "--concurrency", "1", "--queues", queue, "--hostname", f"bench@{socket.gethostname()}",
                  "--loglevel", "info", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        procs.append(start(worker, env, tmp / "worker.log"))
        global WORKER_PGID
        WORKER_PGID = procs[-1].pid
        wait_log(" ready.", procs[-1], tmp / "worker.log")

        estimate_body = json.dumps({"scenario": setup["spec"]}).encode()
        next_new = iter(ids[args.round_trips:])

        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        make_client = lambda: CLIENTS[args.client](url, headers)  # noqa: E731
        n = args.clients

        async def phases():
            rows = []
            warm = await hammer("warm-up", make_client, 4, 2, lambda i: ("/api/v1/estimate/", estimate_body))
            rows.append(await hammer(f"POST /api/v1/estimate/ ({n} clients)", make_client, n,
                                     args.duration, lambda i: ("/api/v1/estimate/", estimate_body)))
            client_side, server_side = await round_trips(make_client, ids, args.round_trips)
            rows.append(client_side)
            rows.append(await hammer(f"POST runs/, identical input ({n} clients)", make_client, n,
                                     args.duration,
                                     lambda i: (f"/api/v1/scenarios/{setup['same']}/runs/", b"")))
            rows.append(await hammer(f"POST runs/, new input, queued ({n} clients)", make_client, n,
                                     args.duration,
                                     lambda i: (f"/api/v1/scenarios/{next(next_new)}/runs/", b"")))
            return warm, rows, server_side

        _, rows, server_side = asyncio.run(phases())

        sweeps = []
        if sweep_sizes:
            drained = asyncio.run(drain_runs(make_client))   # the queued runs done first
            print(f"(before the sweeps: {drained} runs were still queued or running; waited for them)",
                  file=sys.stderr)
            stop(procs.pop())                              # the -c 1 worker makes way
            sweep_worker = [python, "-m", "celery", "-A", "tierlab", "worker", "--pool", "prefork",
                            "--concurrency", str(args.sweep_workers), "--queues", queue,
                            "--hostname", f"bench-sweeps@{socket.gethostname()}", "--loglevel", "info",
                            "--without-gossip", "--without-mingle", "--without-heartbeat"]
            procs.append(start(sweep_worker, env, tmp / "worker-sweeps.log"))
            WORKER_PGID = procs[-1].pid
            wait_log(" ready.", procs[-1], tmp / "worker-sweeps.log")
            for k, size in enumerate(sweep_sizes):
                axes = sweep_axes(size)
                engine = engine_rate(python, env, setup["spec"], axes)
                parallel = engine_rate(python, env, setup["spec"], axes, args.sweep_workers)
                web = asyncio.run(sweep_end_to_end(make_client, setup["same"], axes, f"bench-sweep-{k}-{size}"))
                sweeps.append((size, engine, parallel, web))
    finally:
        for proc in reversed(procs):
            stop(proc)

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    cpus = usable_cores()
    backend = ("environment's DATABASE_URL / CELERY_BROKER_URL" if args.use_env
               else "SQLite + filesystem broker (temporary folder)")
    print(f"\ntierlab API benchmark: {platform.processor() or platform.machine()}, {cpus} CPU cores, "
          f"Python {platform.python_version()}; {args.client} client; gunicorn {args.workers} x {args.worker_class}"
          f"{f' ({args.threads} threads)' if args.worker_class == 'gthread' else ''}, "
          f"DB_CONN_MAX_AGE={args.conn_max_age}; 1 Celery worker (-c 1); {backend}; "
          f"client and servers share the machine; load average (1 / 5 / 15 min) after: {load}")
    print(f"before it started (1 s): {quiet.describe()}\n")
    print(HEADER)
    for row in rows:
        print(row.row())
    print("(load 1m: the 1-minute load average before -> after the phase; elsewhere: CPU cores kept "
          "busy by other processes plus hypervisor steal, averaged over the phase)")
    estimate = rows[0]
    print(f"\nquick estimate, {args.clients} clients: p50 {estimate.percentile_ms(50):.1f} ms, "
          f"p99 {estimate.percentile_ms(99):.1f} ms (goal: p99 < 50 ms), {estimate.errors} errors; "
          f"measured with {estimate.load.describe()}")
    if estimate.load.busy or quiet.busy:
        print("  the machine was busy with other work: the tail includes waiting for a CPU; "
              "rerun on a quiet machine before comparing with published figures")
    print("\nCPU per successful request (ms): gunicorn processes / this client process")
    for row in rows:
        if row.server_cpu is not None and row.latencies:
            n = len(row.latencies)
            print(f"  {row.name:<52} {row.server_cpu / n * 1e3:6.2f} / {row.client_cpu / n * 1e3:5.2f}")
    if server_side:
        server_side.sort()
        print(f"\nrun created -> finished on the server (warm worker, {len(server_side)} runs): "
              f"median {statistics.median(server_side) * 1e3:.0f} ms, "
              f"max {server_side[-1] * 1e3:.0f} ms")
    for size, engine, parallel, web in sweeps:
        rate = web["points"] / web["elapsed_s"]
        share = rate / (args.sweep_workers * engine["points_per_s"])
        print(f"\nsweep of {size:,} points ({web['chunks']} chunks, {web['valid_done']} evaluated, "
              f"{web['status']}): {web['elapsed_s']:.2f} s end to end, POST to finished_at (POST {web['post_s'] * 1e3:.0f} ms; "
              f"a client polling every {POLL_S} s saw it end at {web['seen_s']:.2f} s), "
              f"{rate:.0f} points/s through gunicorn + Celery with {args.sweep_workers} worker processes; "
              f"the engine alone {engine['points_per_s']:.0f} points/s in one process on the same points "
              f"({engine['points']:,} in {engine['wall_s']:.2f} s, {engine['cpu_s']:.2f} s CPU): "
              f"{share:.2f} of {args.sweep_workers} x the engine's rate per worker process (goal >= 0.80"
              f"{'; 400 points: under 2 s' if size == 400 else ''})")
        print(f"  the engine alone in {parallel['processes']} processes at once, each on its share of the points: "
              f"{parallel['points_per_s']:.0f} points/s ({parallel['wall_s']:.2f} s, {parallel['cpu_s']:.2f} s CPU): "
              f"the sweep ran at {rate / parallel['points_per_s']:.2f} of that (the same processes competing for "
              f"the same cores)")
        print(f"  CPU per point: worker processes {web['worker_cpu_s'] / size * 1e3:.2f} ms, the engine alone "
              f"{engine['cpu_s'] / engine['points'] * 1e3:.2f} ms ({engine['cpu_s'] / max(web['worker_cpu_s'], 1e-9):.2f} "
              f"of the workers' CPU is the engine's); gunicorn {web['server_cpu_s'] * 1e3:.0f} ms in all")
        print(f"  sweep measured with {web['load'].describe()}")
        print(f"  engine measured with {engine['load'].describe()}; in {parallel['processes']} processes with "
              f"{parallel['load'].describe()}")
    codes = {row.name: row.codes for row in rows if row.errors}
    if codes:
        print(f"status codes of phases with errors: {codes}")
    if args.keep:
        print(f"logs and database: {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
