"""Recommendation models: Zipf hit rates by hand and by seeded sampling, hybrid placement
over tiers, lookup cost, PS versus all-to-all step graphs, MoE, DLRM MLPerf presets
against the published table sizes, and bad input."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simulation import ScenarioError
from simulation.recsys import (PRESETS, RecModelSpec, TierOption, embedding_designs,
                               evaluate_embedding, evaluate_recsys, hbm_left_for_embeddings,
                               moe_designs, resolve_tiers)
from simulation.recsys import zipf
from simulation.recsys.tiers import hit_rates, place, table_arrays, tier_time_s
from tests.refdata import assert_close, cases, ids

H100 = dict(hbm_bytes_per_s=3.35e12, host_link_bytes_per_s=55.4e9, nic_bytes_per_s=400e9,
            scaleup_bytes_per_s=450e9)                     # presets: h100-sxm5-80gb, dgx-h100


def spec(tables, **kw):
    d = dict(tables=tables, bottom_mlp=[tables[0]["dim"]], batch_size=2, sample_lookups=0)
    d.update(kw)
    return RecModelSpec.from_dict(d)


def tier(name, cap, bw=1e12, **kw):
    return TierOption(name, capacity_bytes=cap, read_bytes_per_s=bw, **kw)


FOUR = [dict(name="t", rows=4, dim=1, zipf_alpha=1.0)]    # weights 1, 1/2, 1/3, 1/4; 4 B rows


# ------------------------------------------------------------------ harmonic numbers
def test_harmonic_hand_values():
    assert zipf.harmonic(4, 1.0) == pytest.approx(25 / 12, rel=1e-15)      # 1+1/2+1/3+1/4
    assert zipf.harmonic(3, 2.0) == pytest.approx(49 / 36, rel=1e-15)      # 1+1/4+1/9
    assert zipf.harmonic(7, 0.0) == 7.0                                    # uniform: n
    assert zipf.harmonic(0, 1.3) == 0.0


@pytest.mark.parametrize("alpha", [0.3, 0.999, 1.0, 1.001, 1.5, 3.0])
def test_euler_maclaurin_equals_the_exact_sum(alpha):
    n = 10**6                                  # beyond EXACT_TERMS: the tail is approximated
    exact = float(np.sum(np.arange(1, n + 1, dtype=np.float64) ** -alpha))
    assert zipf.harmonic(n, alpha) == pytest.approx(exact, rel=1e-12)


def test_harmonic_asymptotics_for_40m_rows():
    # H(n, 1) = ln n + gamma + 1/(2n) - 1/(12 n^2) + ...  (A&S 6.3.18 with psi(n+1))
    n, gamma = 40_000_000, 0.5772156649015329
    assert zipf.harmonic(n, 1.0) == pytest.approx(math.log(n) + gamma + 1 / (2 * n), rel=1e-14)
    # H(n, 2) = pi^2/6 - 1/n + 1/(2n^2) - 1/(6n^3) + ...  (tail sum_{k>n} 1/k^2)
    n = 10**6
    assert zipf.harmonic(n, 2.0) == pytest.approx(math.pi**2 / 6 - 1 / n + 1 / (2 * n**2), rel=1e-14)


# ------------------------------------------------------------------ hit rates
def test_four_rows_alpha_one_by_hand():
    # H = 25/12; HBM 1 row: 1/H = 12/25; DDR 2 rows: (1/2 + 1/3)/H = 2/5; rest 1/4/H = 3/25.
    tiers = [tier("hbm", 4), tier("ddr", 8), tier("nvme", 1e9)]
    r = evaluate_embedding(spec(FOUR), tiers, num_gpus=1, gpus_per_node=1,
                           host_link_bytes_per_s=None, dense_step_s=None)
    got = [t["hit_rate"] for t in r["tiers"]]
    assert got == pytest.approx([12 / 25, 2 / 5, 3 / 25], rel=1e-14)
    assert [t["rows"] for t in r["tiers"]] == [1, 2, 1]


def test_hottest_rows_per_byte_win_across_tables():
    # A: 2 rows, 1 lookup/sample; B: 2 rows, 3 lookups/sample; both uniform, 4 B rows.
    # B's rows are 3x denser in lookups per byte, so 8 B of HBM hold B: HBM serves 3/4.
    # With 4 B of HBM one of B's two tied rows fits: 1/2 of B's lookups = 3/8 of all.
    s = spec([dict(name="A", rows=2, dim=1, zipf_alpha=0), dict(name="B", rows=2, dim=1,
                                                               zipf_alpha=0, lookups_per_sample=3)])
    for cap, (a, b, total) in ((8, (0.0, 1.0, 3 / 4)), (4, (0.0, 0.5, 3 / 8))):
        r = evaluate_embedding(s, [tier("hbm", cap), tier("ddr", 1e9)], num_gpus=1, gpus_per_node=1,
                               host_link_bytes_per_s=None, dense_step_s=None)
        assert [t["tiers"]["hbm"]["hit_rate"] for t in r["tables"]] == pytest.approx([a, b])
        assert r["tiers"][0]["hit_rate"] == pytest.approx(total)


def test_a_tier_does_not_absorb_the_slack_above_it():
    # 64 B rows (16 x fp32), uniform: 100 B of HBM hold 1 row; 100 B of DDR hold 1 more
    # (not 2, which a cumulative 200 B would give); NVMe the other 8.
    s = spec([dict(name="t", rows=10, dim=16, zipf_alpha=0)])
    r = evaluate_embedding(s, [tier("hbm", 100), tier("ddr", 100), tier("nvme", 1e9)], num_gpus=1,
                           gpus_per_node=1, host_link_bytes_per_s=None, dense_step_s=None)
    assert [t["rows"] for t in r["tiers"]] == [1, 1, 8] and r["fits"]


def test_a_table_that_fits_in_hbm_never_touches_lower_tiers():
    s = spec([dict(name="t", rows=1000, dim=16, zipf_alpha=1.1)], batch_size=512)
    with_tiers = RecModelSpec.from_dict({**s.to_dict(), "tiers": {"hbm": {}, "ddr": {}, "nvme": {}}})
    tiers = resolve_tiers(with_tiers, hbm_free_bytes_per_gpu=1e9, hbm_bytes_per_s=3.35e12)
    r = evaluate_embedding(s, tiers, num_gpus=8, gpus_per_node=8, host_link_bytes_per_s=55.4e9,
                           dense_step_s=1e-3)
    hbm, *lower = r["tiers"]
    assert hbm["hit_rate"] == 1.0 and hbm["rows"] == 1000
    for t in lower:
        assert (t["rows"], t["bytes"], t["lookups_per_step"], t["lookup_s"], t["cost_usd"]) == (0, 0, 0, 0, 0)
    assert r["pcie_busy_s"] == 0.0


@pytest.mark.parametrize("rows,alpha,caps", [(4, 1.0, [1, 2]), (1000, 0.8, [10, 200]),
                                             (40_000_000, 1.05, [100_000, 5_000_000])])
def test_closed_form_matches_a_seeded_sample(rows, alpha, caps):
    # 200,000 seeded draws (rejection-inversion on 1..n); each tier's sampled share lies
    # within 5 binomial standard errors of (H(b) - H(a)) / H(n).
    s = spec([dict(name="t", rows=rows, dim=1, zipf_alpha=alpha)], sample_lookups=200_000, seed=7)
    tiers = [tier("hbm", 4 * caps[0]), tier("ddr", 4 * (caps[1] - caps[0])), tier("nvme", 4 * rows)]
    r = evaluate_embedding(s, tiers, num_gpus=1, gpus_per_node=1, host_link_bytes_per_s=None,
                           dense_step_s=None)
    assert r["sample_check"]["max_z"] < 5
    for t in r["tiers"]:
        assert t["sampled_hit_rate"] == pytest.approx(t["hit_rate"], abs=5 * math.sqrt(0.25 / 2e5))


def test_sampler_stays_on_its_support_and_is_seeded():
    a = zipf.sample(40_000_000, 1.2, 50_000, np.random.default_rng(3))
    b = zipf.sample(40_000_000, 1.2, 50_000, np.random.default_rng(3))
    assert a.min() >= 1 and a.max() <= 40_000_000 and np.array_equal(a, b)
    u = zipf.sample(10, 0.0, 50_000, np.random.default_rng(0))
    assert u.min() == 1 and u.max() == 10


# ------------------------------------------------------------------ distinct rows
def test_expected_distinct_by_hand():
    # 4 rows, alpha 1: p = (12/25)(1, 1/2, 1/3, 1/4) = .48, .24, .16, .12; two draws:
    # sum 1 - (1 - p)^2 = 2 - sum p^2 = 2 - .328 = 1.672.
    assert zipf.expected_distinct(2, 4, 1.0) == pytest.approx(1.672, rel=1e-14)
    assert zipf.expected_distinct(10, 10, 0.0) == pytest.approx(10 * (1 - 0.9**10), rel=1e-14)
    assert zipf.expected_distinct(1, 10**7, 1.1) == pytest.approx(1.0, rel=1e-12)
    assert zipf.expected_distinct(1e12, 1000, 0.5) == pytest.approx(1000, rel=1e-12)


@pytest.mark.parametrize("alpha,k", [(0.5, 1e3), (1.0, 1e5), (1.3, 1e7)])
def test_expected_distinct_tail_approximation(alpha, k):
    n = 3_000_000                              # > DISTINCT_EXACT_ROWS: integral for the tail
    p = np.arange(1, n + 1, dtype=np.float64) ** -alpha
    p /= p.sum()
    exact = float(np.sum(-np.expm1(k * np.log1p(-p))))
    assert zipf.expected_distinct(k, n, alpha) == pytest.approx(exact, rel=1e-9)


# ------------------------------------------------------------------ lookup cost
def test_tier_time_takes_the_binding_term():
    # NVMe: 1e6 4-KiB reads: latency 1e6 * 60us / 128 = 0.47 s, IOPS 1e6 / 1e6 = 1 s,
    # bandwidth 4.096e9 / 6.9e9 = 0.59 s -> 1 s, IOPS-bound.
    nvme = TierOption("nvme", latency_s=60e-6, queue_depth=128, read_iops=1e6, read_bytes_per_s=6.9e9)
    assert tier_time_s(nvme, 1e6, 4.096e9) == (pytest.approx(1.0), "iops")
    # DDR with one read in flight: 1000 x 100 ns = 100 us, latency-bound.
    ddr = TierOption("ddr", latency_s=100e-9, queue_depth=1, read_bytes_per_s=600e9)
    assert tier_time_s(ddr, 1000, 64e3) == (pytest.approx(1e-4), "latency")


def test_tiers_share_the_host_links():
    # Uniform 100-row table, 10 rows per tier, 100 lookups of 4 B per step on one GPU:
    # DDR and CXL each serve 10 lookups = 40 B. Their own links are fast (1e6 B/s);
    # PCIe is 10 B/s, so both crossing it take (40 + 40) / 10 = 8 s, not 4.
    s = spec([dict(name="t", rows=100, dim=1, zipf_alpha=0)], batch_size=100)
    tiers = [tier("hbm", 40), tier("ddr", 40, 1e6), tier("cxl", 40, 1e6), tier("nvme", 1e9, 1e6)]
    r = evaluate_embedding(s, tiers, num_gpus=1, gpus_per_node=1, host_link_bytes_per_s=10.0,
                           dense_step_s=2.0)
    assert [t["lookups_per_step"] for t in r["tiers"]] == pytest.approx([10, 10, 10, 70])
    # NVMe's 70 x 4 B also cross PCIe: (40 + 40 + 280) / 10 = 36 s; 2 s of it hidden.
    assert r["lookup_s_per_step"] == pytest.approx(36.0)
    assert (r["hidden_s"], r["exposed_s"]) == (pytest.approx(2.0), pytest.approx(34.0))


def test_money_per_tier():
    # 4 rows x 4 B: 4 B in HBM at $300/GB, 12 B in DDR at $5/GB.
    tiers = [tier("hbm", 4, price_usd_per_gb=300), tier("ddr", 1e9, price_usd_per_gb=5)]
    r = evaluate_embedding(spec(FOUR), tiers, num_gpus=1, gpus_per_node=1,
                           host_link_bytes_per_s=None, dense_step_s=None)
    assert [t["cost_usd"] for t in r["tiers"]] == pytest.approx([4e-9 * 300, 12e-9 * 5])
    assert r["tiers"][0]["all_here_usd"] == pytest.approx(16e-9 * 300)


# ------------------------------------------------------------------ PS versus all-to-all
PS_TABLE = [dict(name="t", rows=1_000_000, dim=128, zipf_alpha=0)]       # 512-byte rows


def test_ps_traffic_is_touched_rows_times_row_bytes_times_two():
    # Hand example: 4 rows, alpha 1, 16-byte rows (4 x fp32), one worker, batch 2:
    # E[touched] = 1.672 (above), so pull = push = 1.672 x 16 B; total 53.504 B.
    s = spec([dict(name="t", rows=4, dim=4, zipf_alpha=1.0)], ps=dict(heartbeat_bytes=0))
    r = embedding_designs(s, num_gpus=1, gpus_per_node=1, nic_bytes_per_s=1e9,
                          scaleup_bytes_per_s=1e9, dense_step_s=0.0)
    ps = r["designs"][0]
    assert ps["design"] == "parameter_server"
    assert ps["bytes_on_wire"] == pytest.approx(1.672 * 16 * 2, rel=1e-14)
    s3 = spec([dict(name="t", rows=4, dim=4, zipf_alpha=1.0)], ps=dict(heartbeat_bytes=0, replication=3))
    ps3 = embedding_designs(s3, num_gpus=1, gpus_per_node=1, nic_bytes_per_s=1e9,
                            scaleup_bytes_per_s=1e9, dense_step_s=0.0)["designs"][0]
    assert ps3["traffic_bytes"]["replication"] == pytest.approx(2 * 1.672 * 16)   # 2 backups


def test_ps_step_by_hand_on_one_gpu():
    # One worker, one server: pull and push at min(server 5 GB/s, NIC 10 GB/s) = 5 GB/s.
    # Uniform 1e6 rows, 1000 lookups: 1e6 (1 - (1 - 1e-6)^1000) touched rows of 512 B.
    # All-to-all on one GPU moves nothing: its step is the dense compute.
    s = spec(PS_TABLE, bottom_mlp=[128], batch_size=1000, ps=dict(servers=1, server_nic_bytes_per_s=5e9))
    r = embedding_designs(s, num_gpus=1, gpus_per_node=1, nic_bytes_per_s=10e9, scaleup_bytes_per_s=1e9,
                          dense_step_s=0.01, network_efficiency=1.0)
    touched = 1e6 * -math.expm1(1000 * math.log1p(-1e-6))
    ps, a2a = r["designs"]
    assert ps["step_time_s"] == pytest.approx(2 * touched * 512 / 5e9 + 0.01, rel=1e-9)
    assert (a2a["step_time_s"], a2a["bytes_on_wire"]) == (pytest.approx(0.01), 0.0)
    assert r["faster"] == "all_to_all"


def test_all_to_all_and_dense_allreduce_share_the_nic():
    # Two nodes x 1 GPU, 1e6 B/s NIC, batch 1000, one 128-dim fp32 table:
    # pooled = 1000 x 128 x 4 = 512,000 B; each rank sends 512000/2 x 1/2 = 128,000 B
    # each way. Dense: bottom 13->128 (1,792 params), top 129->1 (130): 1,922 x 4 B =
    # 7,688 B, ring all-reduce sends 2 x 1/2 x 7,688 = 7,688 B. Backward all-to-all and
    # all-reduce share the NIC (max-min, work-conserving): (128,000 + 7,688) / 1e6 s.
    s = spec(PS_TABLE, bottom_mlp=[13, 128], top_mlp=[1], batch_size=1000)
    assert s.dense_params["total"] == 1922
    r = embedding_designs(s, num_gpus=2, gpus_per_node=1, nic_bytes_per_s=1e6, scaleup_bytes_per_s=1e9,
                          dense_step_s=0.01, network_efficiency=1.0)
    a2a = r["designs"][1]
    assert a2a["step_time_s"] == pytest.approx(0.128 + 0.01 + 0.135688, rel=1e-9)
    assert a2a["traffic_bytes"] == pytest.approx(dict(forward_all_to_all=256000, backward_all_to_all=256000,
                                                      dense_allreduce=2 * 7688))


def test_skew_and_more_servers_favour_the_parameter_server():
    # 8 tables of 1e7 rows, 65,536 one-hot lookups per worker per table. At alpha 1.2 a
    # worker touches ~94k distinct rows (1.5 GB moved in all) against 8 GB of pooled
    # embeddings for all-to-all: with 64 shards the PS wins, with one shard its NIC is
    # the bottleneck. At alpha 0.5 almost every lookup is a distinct row: all-to-all wins.
    kw = dict(num_gpus=16, gpus_per_node=8, nic_bytes_per_s=400e9, scaleup_bytes_per_s=450e9,
              dense_step_s=1e-3)

    def run(alpha, servers):
        d = dict(tables=[dict(name=f"t{i}", rows=10**7, dim=128, zipf_alpha=alpha) for i in range(8)],
                 bottom_mlp=[128], batch_size=65536 * 16, ps={"servers": servers})
        return embedding_designs(RecModelSpec.from_dict(d), **kw)

    skewed_many, skewed_one, flat_many = run(1.2, 64), run(1.2, 1), run(0.5, 64)
    assert skewed_many["designs"][0]["step_time_s"] < skewed_one["designs"][0]["step_time_s"]
    assert skewed_many["faster"] == "parameter_server"
    assert skewed_one["faster"] == flat_many["faster"] == "all_to_all"
    assert skewed_many["designs"][0]["bytes_on_wire"] < skewed_many["designs"][1]["bytes_on_wire"]


# ------------------------------------------------------------------ MoE
def test_moe_bytes_by_hand_and_which_wins():
    # 8 experts, uniform routing, 2 nodes x 1 GPU, 64 tokens, top-2: each worker routes
    # 64 token-slots -> E[experts touched] = 8 (1 - (7/8)^64); a2a per rank per layer
    # 32 x 2 x 1024 x 2 B x 1/2 = 65,536 B, four times (dispatch, combine, both backward).
    # 1e3-parameter experts: the PS moves ~32 KB per worker at 25 GB/s (one 50 GB/s
    # server shared by 2), all-to-all 262 KB at 50 GB/s: the PS wins; 1e9 parameters: not.
    kw = dict(experts=8, tokens=64, top_k=2, hidden=1024, num_gpus=2, gpus_per_node=1,
              nic_bytes_per_s=50e9, scaleup_bytes_per_s=450e9, network_efficiency=1.0)
    r = moe_designs(expert_params=1e3, **kw)
    ps, a2a = r["designs"]
    touched = 8 * (1 - (7 / 8) ** 64)
    assert ps["traffic_bytes"]["pull"] == pytest.approx(2 * touched * 1e3 * 2)
    assert a2a["bytes_on_wire"] == pytest.approx(4 * 2 * 65536)
    assert r["faster"] == "expert_parameter_server"         # tiny experts: pull the weights
    assert moe_designs(expert_params=1e9, **kw)["faster"] == "expert_all_to_all"


# ------------------------------------------------------------------ DLRM MLPerf presets
DLRM = cases("dlrm_mlperf")


@pytest.mark.parametrize("case", DLRM, ids=ids(DLRM))
def test_dlrm_sizes_equal_the_published_ones(case):
    e, tol = case["expected"], case["tolerance"]
    if case["id"].startswith("dlrm_torchrec"):
        i = case["inputs"]
        s = spec([dict(name=f"C{k}", rows=r, dim=i["embedding_dim"]) for k, r in enumerate(i["table_rows"])],
                 bottom_mlp=[i["embedding_dim"]])
        b = s.embedding_bytes
        # The README's "GiB" column is decimal GB (91.10): the trap this case records.
        got = dict(total_rows=sum(t.rows for t in s.tables), embedding_bytes=b, decimal_gb=b / 1e9,
                   readme_printed_gib=b / 1e9, binary_gib=b / 2**30)
    else:
        s = RecModelSpec.from_dict({"preset": "dlrm-mlperf-v1" if "v1" in case["id"] else "dlrm-mlperf-v2"})
        b = s.embedding_bytes
        got = dict(num_tables=len(s.tables), table_rows=[t.rows for t in s.tables],
                   total_rows=sum(t.rows for t in s.tables),
                   embedding_params=sum(t.rows * t.dim for t in s.tables), embedding_bytes_fp32=b,
                   embedding_gib_fp32=round(b / 2**30, 3))
        if "v1" in case["id"]:
            got.update(bottom_mlp_params=s.dense_params["bottom_mlp"],
                       top_mlp_params=s.dense_params["top_mlp"], top_mlp_input=s.top_mlp_input)
        else:
            # The preset trains with Adagrad: one fp32 accumulator per weight, stored with
            # the rows, = the fp32 table bytes again.
            got.update(multi_hot_sizes=[t.lookups_per_sample for t in s.tables],
                       adagrad_state_bytes_fp32_if_rowwise_free=s.stored_bytes - b)
            for k in ("total_training_samples", "target_auroc", "materialized_dataset_tb"):
                e = {x: v for x, v in e.items() if x != k}      # dataset facts, not sizes
    for key, expected in e.items():
        assert key in got, f"no engine quantity for reference field {key}"
        if isinstance(expected, list):
            assert got[key] == expected, key
        else:
            assert_close(got[key], expected, tol, f"{case['id']}.{key}")


def test_stored_row_bytes_and_hbm_left():
    # 10 rows of 4 fp16 values (8 B): row-wise Adagrad adds one fp32 per row (4 B) and
    # a 16 B hash overhead: 28 B stored per row, 8 B moved per lookup.
    s = spec([dict(name="t", rows=10, dim=4, dtype="fp16", hash_overhead_bytes_per_row=16)],
             embedding_optimizer="rowwise_adagrad")
    assert (s.embedding_bytes, s.stored_bytes, s.tables[0].value_bytes) == (80, 280, 8)
    # DLRM v1 dense part: 171,392 + 2,197,505 parameters x 16 B (mixed-precision Adam).
    v1 = RecModelSpec.from_dict({"preset": "dlrm-mlperf-v1"})
    assert hbm_left_for_embeddings(v1, hbm_capacity_bytes=80e9, runtime_bytes=1.5e9) == \
        pytest.approx(80e9 - 1.5e9 - 2368897 * 16)


def test_spec_round_trips_and_preset_overrides():
    s = RecModelSpec.from_dict({"preset": "dlrm-mlperf-v2", "zipf_alpha": 1.1, "batch_size": 4096,
                                "tiers": {"hbm": {}, "pmem": {"price_usd_per_gb": 3}}})
    assert RecModelSpec.from_dict(s.to_dict()) == s
    assert s.batch_size == 4096 and s.alpha(s.tables[0]) == 1.1 and not s.alpha_assumed
    assert RecModelSpec.from_dict({"preset": "dlrm-mlperf-v1"}).alpha_assumed
    assert set(PRESETS) == {"dlrm-mlperf-v1", "dlrm-mlperf-v2"}


def test_evaluate_recsys_on_two_dgx_h100_is_json_ready():
    s = RecModelSpec.from_dict({"preset": "dlrm-mlperf-v1", "batch_size": 65536, "sample_lookups": 20000})
    nodes = {"ddr": dict(capacity_bytes=2048 * 2**30, read_bytes_per_s=614.4e9, latency_s=100e-9),
             "nvme": dict(capacity_bytes=30.72e12, read_bytes_per_s=55.2e9, latency_s=80e-6, devices=8)}
    r = evaluate_recsys(s, num_gpus=16, gpus_per_node=8, hbm_free_bytes_per_gpu=2e9,
                        flops_per_s=989e12 * 0.55, node_tiers=nodes, **H100)
    r = json.loads(json.dumps(r))
    assert [t["tier"] for t in r["embedding"]["tiers"]] == ["hbm", "ddr", "nvme"]
    assert sum(t["bytes"] for t in r["embedding"]["tiers"]) == pytest.approx(96136908288)
    assert r["embedding"]["tiers"][0]["bytes"] <= 16 * 2e9
    assert sum(t["hit_rate"] for t in r["embedding"]["tiers"]) == pytest.approx(1.0)
    assert {d["design"] for d in r["ps"]["designs"]} == {"parameter_server", "all_to_all"}
    assert r["ps"]["faster"] in ("parameter_server", "all_to_all") and r["notes"]
    assert any("assumed" in n for n in r["notes"])          # alpha not given: said so


# ------------------------------------------------------------------ bad input
GOOD = dict(tables=[dict(name="t", rows=10, dim=4)], bottom_mlp=[4], batch_size=8)


@pytest.mark.parametrize("change,field", [
    (dict(tables=[]), "recsys.tables"),
    (dict(tables=[dict(name="t", rows=0, dim=4)]), "recsys.tables.0.rows"),
    (dict(tables=[dict(name="t", rows=10, dim=4, dtype="fp64")]), "recsys.tables.0.dtype"),
    (dict(tables=[dict(name="t", rows=10, dim=4, zipf_alpha=-1)]), "recsys.tables.0.zipf_alpha"),
    (dict(tables=[dict(name="t", rows=10, dim=4), dict(name="t", rows=5, dim=4)]), "recsys.tables.1.name"),
    (dict(tables=[dict(name="t", rows=10, dim=8)]), "recsys.tables.0.dim"),
    (dict(batch_size=None), "recsys.batch_size"),
    (dict(preset="dlrm-v9"), "recsys.preset"),
    (dict(top_mlp=["a"]), "recsys.top_mlp.0"),
    (dict(tiers={"hbx": {}}), "recsys.tiers.hbx"),
    (dict(tiers={"ddr": {"read_bytes_per_s": 0}}), "recsys.tiers.ddr.read_bytes_per_s"),
    (dict(tiers={"ddr": {"bandwidth": 1}}), "recsys.tiers.ddr.bandwidth"),
    (dict(ps={"replication": 0}), "recsys.ps.replication"),
    (dict(comm_dtype="fp8"), "recsys.comm_dtype"),
    (dict(embedding_optimizer="adam"), "recsys.embedding_optimizer"),
    (dict(dcn_num_layers=2), "recsys.dcn_num_layers"),
    (dict(colour="red"), "recsys.colour"),
])
def test_bad_input_names_the_field(change, field):
    d = {**GOOD, **change}
    with pytest.raises(ScenarioError) as e:
        RecModelSpec.from_dict({k: v for k, v in d.items() if v is not None})
    assert e.value.field == field


def test_missing_hbm_capacity_names_the_field():
    with pytest.raises(ScenarioError) as e:
        resolve_tiers(RecModelSpec.from_dict(GOOD), hbm_free_bytes_per_gpu=None, hbm_bytes_per_s=1e12)
    assert e.value.field == "recsys.tiers.hbm.capacity_bytes"


# ------------------------------------------------------------------ properties
table = st.fixed_dictionaries(dict(
    rows=st.integers(1, 10**7), dim=st.sampled_from([1, 8, 64]), alpha=st.floats(0, 2.5),
    lookups=st.floats(0.1, 50)))


def _tab(ts):
    dim = ts[0]["dim"]                         # the dot interaction needs one dim
    return table_arrays(spec([dict(name=f"t{i}", rows=t["rows"], dim=dim, zipf_alpha=t["alpha"],
                                   lookups_per_sample=t["lookups"]) for i, t in enumerate(ts)]))


@settings(max_examples=60, deadline=None)
@given(st.lists(table, min_size=1, max_size=4), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_hit_rates_sum_to_one_and_more_hbm_never_hurts(ts, f1, f2, f3):
    tab = _tab(ts)
    total = float(np.sum(tab["rows"] * tab["row_bytes"]))
    small, big = sorted([f1 * total, f2 * total])
    weights = tab["lookups"] / tab["lookups"].sum()
    hbm = []
    for cap in (small, big):
        caps = [cap, f3 * total, total]
        cum = place(tab, caps)
        hits = hit_rates(tab, cum)
        assert hits.sum(axis=0) == pytest.approx(np.ones(len(ts)), abs=1e-9)
        held = np.diff(np.vstack([0 * cum[0], cum]), axis=0) @ tab["row_bytes"]
        assert np.all(held <= np.array(caps) * (1 + 1e-12))      # no tier over its capacity
        assert np.array_equal(cum[-1], tab["rows"])
        hbm.append(float(hits[0] @ weights))
    assert hbm[1] >= hbm[0] - 1e-12
