"""Units and input files: loaders, shipped catalogues, validation errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hps import ConfigError
from hps.config import (
    JobDefaults,
    Layer,
    Workload,
    load_catalog,
    load_network,
    load_workload,
    parse_schedule,
    workload_to_toml,
    write_workload,
)
from hps.config.loaders import parse_catalog, parse_network, parse_workload

ROOT = Path(__file__).resolve().parents[1]
CLOUD = ROOT / "topologies" / "catalogs" / "cloud-2024.toml"
SMALL = ROOT / "topologies" / "catalogs" / "small.toml"
NET_3D = ROOT / "topologies" / "networks" / "3d-switch-8x8x8.toml"
GIB = 2**30

DIMENSION = """
  [[resource.dimension]]
  size = 4
  bandwidth_GiBps = 100.0
  latency_ns = 1000.0
  algorithm = "switch"
"""

RESOURCE = (
    """
[[resource]]
name = "gpu"
kind = "gpu"
peak_TFLOPs = 100.0
efficiency_dense = 0.4
efficiency_sparse = 0.02
mem_bw_GiBps = 1000.0
io_bw_GiBps = 0.25
nic_bw_GiBps = 5.0
memory_GiB = 32.0
price_per_hour = 3.0
max_units = 4
"""
    + DIMENSION
)

CATALOG = 'name = "tiny"\n' + RESOURCE

NETWORK = """name = "net"
[[dimension]]
size = 8
bandwidth_GiBps = 50.0
latency_ns = 1.0
algorithm = "ring"
"""

LAYER = """
[[layer]]
name = "fc"
kind = "dense"
flops = 1000.0
mem_bytes = 200.0
io_bytes = 0.0
act_bytes = 64.0
dense_param_bytes = 4096.0
sparse_param_bytes = 0.0
"""

WORKLOAD = 'name = "w"\n' + LAYER


def write(tmp_path: Path, text: str, name: str = "input.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def replaced(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


def expect_error(load, path, field: str, *words: str) -> ConfigError:
    """`load(path)` raises a ConfigError naming the file and `field`, mentioning `words`."""
    with pytest.raises(ConfigError) as info:
        load(path)
    err = info.value
    message = str(err)
    assert err.source == str(path)
    assert err.field == field
    assert str(path) in message and field in message
    for word in words:
        assert word in message, message
    return err


# ------------------------------------------------------------------ shipped files


def test_cloud_2024_catalogue_loads_with_units_converted_to_bytes_seconds_flops():
    catalog = load_catalog(CLOUD)
    assert catalog.name == "cloud-2024"
    assert {"cpu", "t4", "v100", "a100"} <= set(catalog.names)
    a100 = catalog.resources[catalog.index("a100")]
    assert a100.memory == 40.0 * GIB
    assert a100.peak_flops == 312.0 * 1e12
    assert a100.mem_bw == 1448.2 * GIB
    assert a100.network.name == "a100"
    assert a100.network.dimensions[0].latency == 1000.0 * 1e-9
    assert a100.network.dimensions[0].bandwidth == 279.40 * GIB
    cpu = catalog.resources[catalog.index("cpu")]
    assert cpu.kind == "cpu" and cpu.memory == 1024.0 * GIB
    assert len(cpu.network.dimensions) == 1


def test_cloud_2024_keeps_the_modelling_intent_gpus_dense_fast_sparse_poor_io_slow():
    catalog = load_catalog(CLOUD)
    cpu = catalog.resources[catalog.index("cpu")]
    for res in catalog.resources:
        assert res.max_units <= res.network.total_size
        if res.kind == "gpu":
            assert 0.3 <= res.efficiency_dense <= 0.5
            assert 0.01 <= res.efficiency_sparse <= 0.05
            assert 0.1 * GIB <= res.io_bw <= 0.5 * GIB
            assert 32 <= res.max_units <= 64
            assert len(res.network.dimensions) == 2
            assert res.io_bw < cpu.io_bw
            assert res.price_per_hour / res.memory > cpu.price_per_hour / cpu.memory
            ratio = res.efficiency_sparse / res.efficiency_dense
            assert ratio < cpu.efficiency_sparse / cpu.efficiency_dense
    assert 1 * GIB <= cpu.io_bw <= 4 * GIB and cpu.max_units == 64


def test_small_catalogue_has_three_types_with_small_caps():
    catalog = load_catalog(SMALL)
    assert catalog.names == ("cpu", "gpu-a", "gpu-b")
    assert all(r.max_units <= 16 for r in catalog.resources)
    assert catalog.resources[0].price_per_hour == 2.0


def test_network_file_loads_dimension_one_first_with_per_npu_bandwidth_in_bytes_per_s():
    network = load_network(NET_3D)
    assert network.name == "3d-switch-8x8x8"
    assert network.total_size == 512
    assert [d.size for d in network.dimensions] == [8, 8, 8]
    assert network.dimensions[0].bandwidth == 50.0 * GIB
    assert network.dimensions[0].latency == 1.0 * 1e-9
    assert network.dimensions[2].algorithm == "halving_doubling"


def test_parse_functions_validate_already_parsed_dicts():
    network = parse_network(
        {"name": "n", "dimension": [{"size": 2, "bandwidth_GiBps": 1, "latency_ns": 0, "algorithm": "direct"}]},
        "dict",
    )
    assert network.dimensions[0].bandwidth == float(GIB)
    with pytest.raises(ConfigError, match=r"^cfg: network\.dimension\[0\]\.size: must be >= 1"):
        parse_network(
            {"name": "n", "dimension": [{"size": 0, "bandwidth_GiBps": 1, "latency_ns": 0, "algorithm": "direct"}]},
            "cfg",
            prefix="network",
        )
    with pytest.raises(ConfigError, match="resource"):
        parse_catalog({"name": "c"}, "dict")


# ------------------------------------------------------------------ workloads


def sample_workload() -> Workload:
    embed = Layer('embedding "ids"', "sparse", 9984.0, 19968.0, 2048.0, 6656.0, 0.0, 5.12e11)
    fc = Layer(
        "fc-1/über", "dense", 4 / 3, 1.1, 0.0, 2**0.5, 123456789.123, 0.0, measured_time={"cpu": 2.5e-6, "a-100": 1 / 7}
    )
    return Workload("ctr-dnn", (embed, fc), JobDefaults(512.0, 1e4, 1e8), "two\nlines \\ 'q'")


def test_workload_round_trips_exactly_through_write_and_load(tmp_path):
    workload = sample_workload()
    path = tmp_path / "sub" / "ctr.toml"
    write_workload(workload, path)
    assert load_workload(path) == workload
    assert [p.name for p in path.parent.iterdir()] == ["ctr.toml"]


def test_workload_without_defaults_or_description_round_trips(tmp_path):
    workload = Workload("w", (Layer("l", "dense", 1.0, 2.0, 3.0, 4.0, 5.0, 6.0),))
    path = tmp_path / "w.toml"
    write_workload(workload, path)
    assert load_workload(path) == workload
    assert "[defaults]" not in workload_to_toml(workload)


def test_workload_integers_are_accepted_and_converted_to_float(tmp_path):
    path = write(tmp_path, replaced(WORKLOAD, "flops = 1000.0", "flops = 1000"))
    layer = load_workload(path).layers[0]
    assert layer.flops == 1000.0 and isinstance(layer.flops, float)


def test_workload_file_follows_the_spec_format():
    text = workload_to_toml(sample_workload())
    assert text.startswith('name = "ctr-dnn"\n')
    assert "[[layer]]" in text and 'kind = "sparse"' in text and "sparse_param_bytes = 512000000000.0" in text


def test_nothing_is_written_when_the_workload_is_invalid(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text("old contents")
    bad = Workload("w", (Layer("l", "dense", -1.0, 0.0, 0.0, 0.0, 0.0, 0.0),))
    with pytest.raises(ConfigError, match=r"layer\[0\]\.flops"):
        write_workload(bad, path)
    assert path.read_text() == "old contents"
    assert os.listdir(tmp_path) == ["w.toml"]


def test_empty_workload_is_an_error(tmp_path):
    expect_error(load_workload, write(tmp_path, 'name = "w"\n'), "layer", "empty workload")


def test_workload_layer_kind_must_be_dense_or_sparse(tmp_path):
    path = write(tmp_path, replaced(WORKLOAD, '"dense"', '"conv"'))
    expect_error(load_workload, path, "layer[0].kind", "'conv'", "dense, sparse")


def test_workload_numbers_must_be_non_negative(tmp_path):
    path = write(tmp_path, replaced(WORKLOAD, "act_bytes = 64.0", "act_bytes = -64.0"))
    expect_error(load_workload, path, "layer[0].act_bytes", ">= 0", "-64.0")


def test_workload_measured_time_must_be_positive_seconds(tmp_path):
    path = write(tmp_path, WORKLOAD + "[layer.measured_time_s]\ncpu = 0.0\n")
    expect_error(load_workload, path, "layer[0].measured_time_s.cpu", "> 0")


def test_workload_defaults_need_batch_throughput_and_samples(tmp_path):
    path = write(tmp_path, 'name = "w"\n[defaults]\nbatch = 8\nthroughput = 1.0\n' + LAYER)
    expect_error(load_workload, path, "defaults.samples", "missing")


def test_workload_at_most_4096_layers(tmp_path):
    layers = [replaced(LAYER, '"fc"', f'"fc{i}"') for i in range(4097)]
    expect_error(load_workload, write(tmp_path, 'name = "w"\n' + "".join(layers)), "layer", "at most 4096")
    assert len(load_workload(write(tmp_path, 'name = "w"\n' + "".join(layers[:4096]))).layers) == 4096


def test_duplicate_layer_name_is_an_error(tmp_path):
    expect_error(load_workload, write(tmp_path, WORKLOAD + LAYER), "layer[1].name", "duplicate", "'fc'")


# ------------------------------------------------------------------ malformed inputs


def test_wrong_type_string_where_a_number_is_expected(tmp_path):
    path = write(tmp_path, replaced(CATALOG, "memory_GiB = 32.0", 'memory_GiB = "32"'))
    expect_error(load_catalog, path, "resource[0].memory_GiB", "must be a number", "'32' (string)")


def test_wrong_type_bool_is_not_a_number(tmp_path):
    path = write(tmp_path, replaced(CATALOG, "size = 4", "size = true"))
    expect_error(load_catalog, path, "resource[0].dimension[0].size", "integer", "True (boolean)")


def test_wrong_type_float_where_an_integer_is_expected(tmp_path):
    path = write(tmp_path, replaced(CATALOG, "max_units = 4", "max_units = 4.0"))
    expect_error(load_catalog, path, "resource[0].max_units", "integer", "4.0 (float)")


def test_missing_field(tmp_path):
    path = write(tmp_path, replaced(CATALOG, "price_per_hour = 3.0\n", ""))
    expect_error(load_catalog, path, "resource[0].price_per_hour", "missing")


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("size = 4", "size = 0", "resource[0].dimension[0].size"),
        ("bandwidth_GiBps = 100.0", "bandwidth_GiBps = 0.0", "resource[0].dimension[0].bandwidth_GiBps"),
        ("nic_bw_GiBps = 5.0", "nic_bw_GiBps = -5.0", "resource[0].nic_bw_GiBps"),
        ("price_per_hour = 3.0", "price_per_hour = 0", "resource[0].price_per_hour"),
        ("memory_GiB = 32.0", "memory_GiB = -1", "resource[0].memory_GiB"),
        ("peak_TFLOPs = 100.0", "peak_TFLOPs = 0.0", "resource[0].peak_TFLOPs"),
        ("efficiency_dense = 0.4", "efficiency_dense = 1.5", "resource[0].efficiency_dense"),
        ("latency_ns = 1000.0", "latency_ns = -1.0", "resource[0].dimension[0].latency_ns"),
    ],
)
def test_non_positive_size_bandwidth_price_memory(tmp_path, old, new, field):
    path = write(tmp_path, replaced(CATALOG, old, new))
    err = expect_error(load_catalog, path, field, "must be")
    assert new.split("= ")[1] in err.problem  # says what was given


def test_non_finite_number_is_rejected(tmp_path):
    path = write(tmp_path, replaced(CATALOG, "io_bw_GiBps = 0.25", "io_bw_GiBps = inf"))
    expect_error(load_catalog, path, "resource[0].io_bw_GiBps", "finite")


def test_unknown_algorithm(tmp_path):
    path = write(tmp_path, replaced(NETWORK, '"ring"', '"torus"'))
    expect_error(load_network, path, "dimension[0].algorithm", "'torus'", "halving_doubling")


def test_unknown_resource_kind(tmp_path):
    path = write(tmp_path, replaced(CATALOG, 'kind = "gpu"', 'kind = "tpu"'))
    expect_error(load_catalog, path, "resource[0].kind", "'tpu'", "cpu, gpu, other")


def test_unknown_key_is_rejected_listing_the_allowed_ones(tmp_path):
    path = write(tmp_path, replaced(NETWORK, "latency_ns", "latncy_ns"))
    expect_error(
        load_network,
        path,
        "dimension[0].latncy_ns",
        "unknown key",
        "'latency_ns'",
        "size, bandwidth_GiBps, latency_ns, algorithm",
    )


def test_unknown_top_level_key_is_rejected(tmp_path):
    path = write(tmp_path, "version = 2\n" + CATALOG)
    expect_error(load_catalog, path, "version", "unknown key", "name, resource")


def test_duplicate_resource_name(tmp_path):
    expect_error(load_catalog, write(tmp_path, CATALOG + RESOURCE), "resource[1].name", "duplicate", "'gpu'")


def test_max_units_above_network_size(tmp_path):
    path = write(tmp_path, replaced(CATALOG, "max_units = 4", "max_units = 5"))
    expect_error(load_catalog, path, "resource[0].max_units", "network size 4", "got 5")


def test_at_most_six_network_dimensions(tmp_path):
    dims = NETWORK[NETWORK.index("[[dimension]]") :]
    expect_error(load_network, write(tmp_path, NETWORK + dims * 6), "dimension", "at most 6")
    assert len(load_network(write(tmp_path, NETWORK + dims * 5)).dimensions) == 6


def test_network_needs_at_least_one_dimension(tmp_path):
    expect_error(load_network, write(tmp_path, 'name = "n"\n'), "dimension", "missing")


def test_at_most_32_resources(tmp_path):
    resources = [replaced(RESOURCE, 'name = "gpu"', f'name = "g{i}"') for i in range(33)]
    expect_error(load_catalog, write(tmp_path, 'name = "c"\n' + "".join(resources)), "resource", "at most 32")
    assert len(load_catalog(write(tmp_path, 'name = "c"\n' + "".join(resources[:32]))).resources) == 32


def test_resource_name_must_not_contain_a_comma(tmp_path):
    path = write(tmp_path, replaced(CATALOG, 'name = "gpu"', 'name = "g,pu"'))
    expect_error(load_catalog, path, "resource[0].name", "comma")


def test_file_that_is_not_valid_toml(tmp_path):
    path = write(tmp_path, 'name = "broken\n[[resource]\n')
    expect_error(load_catalog, path, "", "not valid TOML")


def test_missing_file(tmp_path):
    path = tmp_path / "nope.toml"
    for load in (load_catalog, load_network, load_workload):
        expect_error(load, path, "", "not found")


def test_error_message_reads_file_field_problem(tmp_path):
    path = write(tmp_path, replaced(CATALOG, "memory_GiB = 32.0", "memory_GiB = -1"))
    with pytest.raises(ConfigError) as info:
        load_catalog(path)
    assert str(info.value) == f"{path}: resource[0].memory_GiB: must be > 0, got -1"


def test_parse_workload_names_the_source_it_is_given():
    with pytest.raises(ConfigError, match=r"^mine: layer\[0\]\.name: required field is missing"):
        parse_workload({"name": "w", "layer": [{"kind": "dense"}]}, "mine")


# ------------------------------------------------------------------ schedules


def test_schedule_maps_names_to_catalogue_indices():
    catalog = load_catalog(SMALL)
    assert parse_schedule("cpu, gpu-b,gpu-a", catalog, 3) == [0, 2, 1]


def test_schedule_with_unknown_resource_name():
    catalog = load_catalog(SMALL)
    with pytest.raises(ConfigError) as info:
        parse_schedule("cpu,tpu,cpu", catalog, 3)
    message = str(info.value)
    assert message.startswith("schedule: layer[1]:") and "'tpu'" in message and "gpu-a" in message


def test_schedule_of_the_wrong_length():
    catalog = load_catalog(SMALL)
    with pytest.raises(ConfigError) as info:
        parse_schedule("cpu,cpu", catalog, 3, source="--schedule")
    assert info.value.source == "--schedule"
    assert "2 resource type(s)" in str(info.value) and "3 layer(s)" in str(info.value)
