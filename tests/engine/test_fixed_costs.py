"""The full evaluation's fixed-cost paths compute what numpy's general functions compute,
bit for bit (issue #17: the same numbers, without numpy's per-call overhead)."""

import numpy as np
import pytest

from simulation import bandwidth
from simulation.checkpoint import curve_intervals, goodput, goodput_curve, waste_parts


@pytest.mark.parametrize("seed", range(5))
def test_curve_intervals_equal_geomspace_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for lo in 10.0 ** rng.uniform(-3, 6, 200):
        hi = lo * 10.0 ** rng.uniform(2, 4)
        assert curve_intervals(lo, hi).tobytes() == np.geomspace(lo, hi, 61).tobytes()


def test_goodput_of_an_interval_inside_the_chart_array_equals_the_scalar_call():
    # evaluate_checkpoint computes the chosen interval with the 61 chart points in one call
    xs = curve_intervals(3.0, 9000.0)
    for tau in (1.0, 37.5, 1234.5, 8.64e4):
        both = goodput(np.concatenate(((tau,), xs)), 12.0, 3.6e4, 95.0)
        assert float(both[0]) == goodput(tau, 12.0, 3.6e4, 95.0)
        assert both[1:].tobytes() == goodput_curve(xs, 12.0, 3.6e4, 95.0)[1].tobytes()


def test_waste_parts_with_the_goodput_given_equal_it_computed():
    g = goodput(600.0, 20.0, 5e4, 130.0 + 7.0)
    assert waste_parts(600.0, 20.0, 5e4, 130.0, 7.0, g) == waste_parts(600.0, 20.0, 5e4, 130.0, 7.0)


def test_offload_curves_equal_numpy_efficiency_bit_for_bit():
    peak = 989e12 * 0.55
    out = bandwidth.analysis(4096, 1, 8192, peak, {"ddr": 77e9 / 8, "nvme": np.float64(6.9e9)})
    bw = np.logspace(9, 13, 40)
    assert out["bandwidth_bytes_per_s"] == bw.tolist()
    for name, c in out["curves"].items():
        assert c["efficiency"] == bandwidth.efficiency(c["arithmetic_intensity"], bw, peak).tolist()
    for t in out["tiers"]:
        for name, e in t["efficiency"].items():
            ait = out["curves"][name]["arithmetic_intensity"]
            assert e == float(bandwidth.efficiency(ait, t["bytes_per_s"], peak))
            assert type(e) is float
    out["bandwidth_bytes_per_s"].append(0.0)          # a caller's change stays in its report
    assert len(bandwidth.analysis(4096, 1, 8192, peak, {})["bandwidth_bytes_per_s"]) == 40
