"""Hybrid embedding placement over memory tiers, hit rates and the lookup cost per step.

Placement (HugeCTR hybrid embedding, generalised to a tier ladder): rows of every table
are ranked by expected lookups per byte, L_t p_t(i) / row_bytes_t, and the hottest fill
HBM (all GPUs together), then DDR, CXL, PMEM (all nodes together), the rest NVMe. The
last tier present takes whatever is left, over its capacity if it must (reported).
Within a table the hottest rows are its lowest ranks, so a placement is one number of
rows per table and tier; tier k of table t serves (H(R_k) - H(R_{k-1})) / H(n_t) of its
lookups (:mod:`.zipf`).

Lookup time of a tier, per step, per device (GPU for HBM, node otherwise), for N row
reads of R bytes of which the medium reads B = N ceil(R / access) access units:

    t = max(N * latency / queue_depth,     Little's law: queue_depth reads in flight
            N / read_iops,                 the medium's random-read rate
            B / read_bytes_per_s)          its bandwidth

(terms without a figure are dropped). Rows outside HBM then cross the GPUs' host links
(PCIe) into HBM: one node's tiers and its host links form a small task graph run by the
bandwidth scheduler, so tiers sharing PCIe slow each other; its makespan is
``lookup_s_per_step``. Lookups of batch i+1 are prefetched during batch i's dense compute
(TorchRec TrainPipelineSparseDist, HugeCTR's pipelined embedding), so only
max(0, lookup - dense) is exposed.
"""

from __future__ import annotations

import math

import numpy as np

from ..scheduler import TaskGraph, simulate
from . import zipf
from .spec import RecModelSpec, TierOption


def table_arrays(spec: RecModelSpec) -> dict:
    """Per-table numbers as arrays: rows, stored bytes per row, moved bytes per row,
    lookups per sample, alpha and H(rows, alpha)."""
    t = spec.tables
    alpha = np.array([spec.alpha(x) for x in t])
    rows = np.array([x.rows for x in t], dtype=np.float64)
    return dict(rows=rows, row_bytes=np.array([spec.row_bytes(x) for x in t], dtype=np.float64),
                value_bytes=np.array([x.value_bytes for x in t], dtype=np.float64),
                lookups=np.array([x.lookups_per_sample for x in t], dtype=np.float64),
                alpha=alpha, h=np.array([zipf.harmonic(n, a) for n, a in zip(rows, alpha)]))


def prefix_rows(tab: dict, capacity_bytes: float) -> np.ndarray:
    """Rows of each table among the hottest ``capacity_bytes`` of all tables.

    Density of rank i of table t: w_t i^-alpha with w_t = L_t / (H_t row_bytes_t). A
    threshold tau keeps floor((w_t / tau)^(1/alpha)) rows (all or none when alpha = 0);
    bisection finds the smallest tau that fits, then the rows tied at the threshold fill
    what is left, tables in index order.
    """
    n, rb, a = tab["rows"], tab["row_bytes"], tab["alpha"]
    if capacity_bytes >= float(np.sum(n * rb)):
        return n.copy()
    if capacity_bytes <= 0:
        return np.zeros_like(n)
    logw = np.log(tab["lookups"]) - np.log(tab["h"]) - np.log(rb)

    def rows(log_tau):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = np.where(a > 0, np.floor(np.exp(np.minimum((logw - log_tau) / np.where(a > 0, a, 1),
                                                           np.log(n) + 1))),
                         np.where(logw >= log_tau, n, 0.0))
        return np.clip(r, 0, n)

    lo = float(np.min(logw - a * np.log(n))) - 1.0      # every row is above: too much
    hi = float(np.max(logw)) + 1.0                      # no row is above: fits
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if float(np.sum(rows(mid) * rb)) <= capacity_bytes:
            hi = mid
        else:
            lo = mid
    r, band = rows(hi), rows(lo) - rows(hi)
    left = capacity_bytes - float(np.sum(r * rb))
    for t in range(len(n)):                             # the tied rows, in table order
        add = min(band[t], math.floor(left / rb[t]))
        r[t] += add
        left -= add * rb[t]
    return r


def place(tab: dict, capacities_bytes: list) -> np.ndarray:
    """Cumulative rows per tier and table, shape (tiers, tables); the last tier takes the
    rest. ``capacities_bytes``: each tier's total capacity, hottest tier first. Each tier
    fills on top of the bytes the tiers above really hold, so none exceeds its own."""
    used, prev, out = 0.0, np.zeros_like(tab["rows"]), []
    for c in capacities_bytes[:-1]:
        prev = np.maximum(prefix_rows(tab, used + c), prev)
        used = float(prev @ tab["row_bytes"])
        out.append(prev)
    out.append(tab["rows"].copy())
    return np.array(out)


def hit_rates(tab: dict, cum_rows: np.ndarray) -> np.ndarray:
    """Share of each table's lookups served by each tier, shape (tiers, tables)."""
    hits = np.zeros_like(cum_rows)
    for t in range(cum_rows.shape[1]):
        prev = 0
        for k in range(cum_rows.shape[0]):
            hits[k, t] = zipf.hit_rate(prev, cum_rows[k, t], tab["rows"][t], tab["alpha"][t])
            prev = cum_rows[k, t]
    return hits


def tier_time_s(tier: TierOption, reads: float, read_bytes: float) -> tuple[float, str]:
    """Time for ``reads`` row reads moving ``read_bytes`` on one device, and the bound."""
    terms = {"latency": reads * tier.latency_s / tier.queue_depth
             if tier.latency_s and tier.queue_depth else 0.0,
             "iops": reads / tier.read_iops if tier.read_iops else 0.0,
             "bandwidth": read_bytes / tier.read_bytes_per_s}
    bound = max(terms, key=terms.get)
    return terms[bound], (bound if terms[bound] > 0 else "none")


def sample_check(tab: dict, cum_rows: np.ndarray, lookups: int, seed: int) -> dict:
    """Draw ``lookups`` ranks per table (seeded) and count where they land: the sampled
    shares (tiers x tables) and their worst z-score against the closed form (binomial
    standard error sqrt(p (1 - p) / lookups))."""
    hits = hit_rates(tab, cum_rows)
    sampled = np.zeros_like(hits)
    for t in range(hits.shape[1]):
        rng = np.random.default_rng([seed, t])
        r = zipf.sample(int(tab["rows"][t]), float(tab["alpha"][t]), lookups, rng)
        tier = np.searchsorted(cum_rows[:, t], r, side="left")
        sampled[:, t] = np.bincount(tier, minlength=hits.shape[0]) / lookups
    se = np.sqrt(hits * (1 - hits) / lookups)
    err = np.abs(sampled - hits)
    z = np.where(se > 0, err / np.where(se > 0, se, 1), np.where(err > 0, np.inf, 0.0))
    return dict(lookups_per_table=lookups, seed=seed, max_abs_error=float(err.max()),
                max_z=float(z.max()), sampled=sampled)


def evaluate_embedding(spec: RecModelSpec, tiers: list, *, num_gpus: int, gpus_per_node: int,
                       host_link_bytes_per_s: float | None, dense_step_s: float | None) -> dict:
    """Placement, hit rates, lookup time and money of ``spec``'s tables on ``tiers``."""
    gpus_per_node = min(gpus_per_node, num_gpus)
    num_nodes = max(1, num_gpus // gpus_per_node)
    tab = table_arrays(spec)
    devices = [num_gpus if t.tier == "hbm" else num_nodes for t in tiers]
    caps = [t.capacity_bytes * d for t, d in zip(tiers, devices)]
    cum = place(tab, caps)
    rows = np.diff(np.vstack([np.zeros(len(spec.tables)), cum]), axis=0)
    hits = hit_rates(tab, cum)
    per_step = spec.batch_size * tab["lookups"]             # lookups per table per step
    total_lookups = float(per_step.sum())
    check = sample_check(tab, cum, spec.sample_lookups, spec.seed) if spec.sample_lookups else None
    total_bytes = float(np.sum(tab["rows"] * tab["row_bytes"]))

    g, below = TaskGraph(), TaskGraph()          # all tiers; the tiers below HBM only
    pcie = None
    if host_link_bytes_per_s:
        pcie = g.add_link("pcie_h2d", gpus_per_node * host_link_bytes_per_s)
        below.add_link("pcie_h2d", gpus_per_node * host_link_bytes_per_s)
    out = []
    for k, t in enumerate(tiers):
        n = hits[k] * per_step
        units = np.ceil(tab["value_bytes"] / t.access_bytes) * t.access_bytes
        useful, medium = float(n @ tab["value_bytes"]), float(n @ units)
        secs, bound = tier_time_s(t, float(n.sum()) / devices[k], medium / devices[k])
        stored = float(rows[k] @ tab["row_bytes"])
        over = stored - caps[k] if stored > caps[k] * (1 + 1e-12) else 0.0
        node_useful = useful / num_nodes
        if secs > 0 and node_useful > 0:
            g.add_link(t.tier, node_useful / secs)
            path = [t.tier] + (["pcie_h2d"] if t.tier != "hbm" and pcie is not None else [])
            g.transfer(f"{t.tier} lookups", node_useful, path, label="lookup")
            if t.tier != "hbm":
                below.add_link(t.tier, node_useful / secs)
                below.transfer(f"{t.tier} lookups", node_useful, path, label="lookup")
        out.append(dict(
            tier=t.tier, devices=devices[k], rows=int(rows[k].sum()), bytes=stored,
            capacity_bytes=caps[k], over_capacity_bytes=over,
            hit_rate=float(n.sum()) / total_lookups,
            sampled_hit_rate=float(check["sampled"][k] @ per_step) / total_lookups if check else None,
            lookups_per_step=float(n.sum()),
            bytes_per_step=useful, medium_bytes_per_step=medium, lookup_s=secs, bound=bound,
            latency_s=t.latency_s, read_iops=t.read_iops, read_bytes_per_s=t.read_bytes_per_s,
            queue_depth=t.queue_depth, access_bytes=t.access_bytes,
            price_usd_per_gb=t.price_usd_per_gb, cost_usd=stored / 1e9 * t.price_usd_per_gb,
            all_here_usd=total_bytes / 1e9 * t.price_usd_per_gb,
            source=t.source, price_source=t.price_source))
    sched = simulate(g.arrays()) if g.names else None
    lookup_s = sched.makespan_s if sched else 0.0
    below_hbm_s = simulate(below.arrays()).makespan_s if below.names else 0.0
    pcie_s = float(sched.link_busy_s[pcie]) if sched is not None and pcie is not None else 0.0
    dense = dense_step_s or 0.0
    tables = [dict(name=x.name, rows=x.rows, dim=x.dim, dtype=x.dtype, row_bytes=spec.row_bytes(x),
                   bytes=x.rows * spec.row_bytes(x), lookups_per_sample=x.lookups_per_sample,
                   zipf_alpha=float(tab["alpha"][i]),
                   tiers={t.tier: dict(rows=int(rows[k, i]), hit_rate=float(hits[k, i]),
                                       sampled_hit_rate=float(check["sampled"][k, i]) if check else None)
                          for k, t in enumerate(tiers)})
              for i, x in enumerate(spec.tables)]
    res = dict(
        tiers=out, tables=tables, total_rows=int(tab["rows"].sum()), total_bytes=total_bytes,
        value_bytes=spec.embedding_bytes, embedding_optimizer=spec.embedding_optimizer,
        fits=all(o["over_capacity_bytes"] == 0 for o in out),
        lookups_per_step=total_lookups, lookup_s_per_step=lookup_s, pcie_busy_s=pcie_s,
        below_hbm_lookup_s=below_hbm_s,
        dense_step_s=dense_step_s, hidden_s=min(lookup_s, dense),
        exposed_s=max(0.0, lookup_s - dense),
        cost_usd=sum(o["cost_usd"] for o in out),
        sample_check={k: v for k, v in check.items() if k != "sampled"} if check else None)
    res["notes"] = _notes(spec, res)
    return res


def _notes(spec: RecModelSpec, r: dict) -> list[str]:
    notes = []
    if spec.alpha_assumed:
        notes.append(f"Zipf alpha {spec.alpha(spec.tables[0]):g} is assumed for tables without "
                     "their own: set recsys.zipf_alpha (or per table) from your access logs; "
                     "hit rates depend strongly on it.")
    for t in r["tiers"]:
        if t["over_capacity_bytes"] > 0:
            notes.append(f"{t['tier'].upper()} holds {t['capacity_bytes'] / 1e9:.1f} GB for embeddings "
                         f"but the rows left for it need {t['bytes'] / 1e9:.1f} GB.")
    busy = [t for t in r["tiers"] if t["lookup_s"] > 0]
    if busy:
        slow = max(busy, key=lambda t: t["lookup_s"])
        notes.append(f"Slowest tier: {slow['tier'].upper()} ({slow['hit_rate']:.1%} of lookups, "
                     f"{slow['lookup_s'] * 1e3:.3g} ms per step, {slow['bound']}-bound).")
    if r["dense_step_s"] is not None:
        notes.append(f"Lookups take {r['lookup_s_per_step'] * 1e3:.3g} ms per step against "
                     f"{r['dense_step_s'] * 1e3:.3g} ms of dense compute: " +
                     (f"{r['exposed_s'] * 1e3:.3g} ms exposed." if r["exposed_s"] > 0
                      else "fully hidden when prefetched a batch ahead."))
    if any(t["tier"] == "pmem" and t["rows"] for t in r["tiers"]):
        notes.append("Optane PMem is discontinued (last shipments 2025) and needs a Xeon that "
                     "supports it (Cascade/Ice Lake for the 100/200 series).")
    if spec.embedding_optimizer != "sgd":
        notes.append(f"Stored bytes include {spec.embedding_optimizer}'s state for every row "
                     f"({r['total_bytes'] / 1e9:.1f} GB stored for {r['value_bytes'] / 1e9:.1f} GB "
                     "of embedding values).")
    notes.append("Training also writes every looked-up row back (and its optimizer state): "
                 "the same rows again, not counted in lookup_s.")
    notes.append("Prices per GB are assumptions (the catalog lists none): override "
                 "recsys.tiers.<tier>.price_usd_per_gb.")
    return notes
