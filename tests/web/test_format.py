"""Display units on the catalog page: always labelled, SI with GiB alongside."""

from tierlab.templatetags.tierlab_format import format_quantity, spec_items


def test_it_labels_units():
    assert format_quantity("hbm_capacity_bytes", 80 * 2**30) == "85.9 GB (80 GiB)"
    assert format_quantity("read_bytes_per_s", 55.2e9) == "55.2 GB/s"
    assert format_quantity("peak_flops_bf16", 989e12) == "989 TFLOP/s"
    assert format_quantity("latency_s", 80e-6) == "80 µs"
    assert format_quantity("latency_s", 1e-7) == "100 ns"
    assert format_quantity("num_layers", 80) == "80"
    assert format_quantity("gated_mlp", True) == "True"


def test_it_flattens_nested_specs():
    items = dict(spec_items({"tiers": {"ddr": {"capacity_bytes": 1e9}}, "x": None}))
    assert items == {"tiers.ddr.capacity_bytes": "1 GB (0.9313 GiB)"}
