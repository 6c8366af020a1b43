"""Display units on the catalog page: always labelled, SI with GiB alongside."""

from tierlab.templatetags.tierlab_format import format_hardware, format_quantity, hardware_unit, spec_items


def test_it_labels_units():
    assert format_quantity("hbm_capacity_bytes", 80 * 2**30) == "85.9 GB (80.0 GiB)"
    assert format_quantity("read_bytes_per_s", 55.2e9) == "55.2 GB/s"
    assert format_quantity("peak_flops_bf16", 989e12) == "989 TFLOP/s"
    assert format_quantity("latency_s", 80e-6) == "80 µs"
    assert format_quantity("latency_s", 1e-7) == "100 ns"
    assert format_quantity("num_layers", 80) == "80"
    assert format_quantity("gated_mlp", True) == "yes"
    assert format_quantity("price_usd_per_node_hour", 39.329) == "$39.33 per node-hour"
    # 30.72 TB of NVMe: 27.94 TiB, not 28,610.2 GiB or 2.861e+04
    assert format_quantity("capacity_bytes", 30.72e12) == "30.72 TB (27.94 TiB)"
    # no exponent, thousands separated: 2.2529e19 B = 22,529 PB
    assert format_quantity("capacity_bytes", 2.2529e19) == "22,529 PB (20,009.77 PiB)"


def test_raw_hardware_figures_carry_the_unit_their_key_names():
    assert hardware_unit("bw_gbps_bidir") == "GB/s"              # this catalog's gbps: gigabytes
    assert hardware_unit("nic_gbit_s") == "Gbit/s"
    assert hardware_unit("aggregate_gib_s") == "GiB/s"
    assert hardware_unit("hbm_gb") == "GB" and hardware_unit("cpu_mem_tib") == "TiB"
    assert hardware_unit("bf16_tflops") == "TFLOP/s"
    assert hardware_unit("read_latency_us_typical") == "µs"
    assert hardware_unit("price_usd_per_hr_capacity_block_late_2024") == "$/h"
    assert hardware_unit("drives") is None and hardware_unit("gpu_model") is None
    assert format_hardware("bw_gbps_bidir", 900) == "900 GB/s"
    assert format_hardware("capacity_gb_options", [16, 32, 64]) == "16, 32, 64 GB"
    assert format_hardware("bw_improvement_vs_100_series_pct", 40) == "40%"
    assert format_hardware("price_usd_per_hr_capacity_block_late_2024", 31.46) == "$31.46/h"
    assert format_hardware("hbm_type", "HBM3") == "HBM3"


def test_it_flattens_nested_specs():
    items = dict(spec_items({"tiers": {"ddr": {"capacity_bytes": 1e9}}, "x": None}))
    assert items == {"tiers.ddr.capacity_bytes": "1 GB (0.931 GiB)"}
