"""The workload zoo: layer tables built from architecture hyperparameters."""

from __future__ import annotations

import math

import pytest

from hps import ConfigError
from hps.config.limits import POLICY_LAYERS
from hps.config.types import STATE_SHARDINGS, JobDefaults, Layer, Workload
from hps.workloads import ZOO, build_workload, list_workloads, resolve_workload
from hps.workloads.layers import dense
from hps.workloads.sparse_layers import embedding

GiB = 2.0**30
NUMBER_FIELDS = ("flops", "mem_bytes", "io_bytes", "act_bytes", "dense_param_bytes", "sparse_param_bytes")
SPARSE_MODELS = ("ctr-dnn", "wide-deep", "deepfm", "dlrm", "matchnet", "word2vec-nce")
LARGE_MODELS = (
    "resnet152", "gpt3-175b", "llama3-70b", "llama3-405b", "transformer-1t", "llama3-8b", "llama2-70b", "gpt-mcore",
)  # fmt: skip
"""Zoo entries with more layers than the learned policy's training bucket (see tests/test_zoo_published.py)."""


def total(workload: Workload, field: str) -> float:
    return sum(getattr(layer, field) for layer in workload.layers)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_every_zoo_workload_builds_an_ordered_table_of_valid_layers(name):
    w = build_workload(name)
    assert w.name == name
    assert len(w.layers) >= 4
    assert len({layer.name for layer in w.layers}) == len(w.layers), "layer names unique"
    for layer in w.layers:
        assert isinstance(layer, Layer)
        assert layer.kind in ("dense", "sparse")
        for field in NUMBER_FIELDS:
            value = getattr(layer, field)
            assert isinstance(value, float) and math.isfinite(value) and value >= 0, (layer.name, field)
    assert total(w, "flops") > 0


@pytest.mark.parametrize("name", sorted(set(ZOO) - set(LARGE_MODELS)))
def test_zoo_workloads_below_the_large_models_have_4_to_32_layers_the_policys_training_bucket(name):
    assert 4 <= len(build_workload(name).layers) <= POLICY_LAYERS


@pytest.mark.parametrize("name", sorted(ZOO))
def test_each_zoo_workload_carries_default_job_parameters_and_a_description(name):
    w = build_workload(name)
    assert isinstance(w.defaults, JobDefaults)
    assert w.defaults.batch > 0 and w.defaults.throughput > 0 and w.defaults.samples > 0
    m = w.defaults.micro_batches
    assert m == math.inf or (m >= 1 and float(m).is_integer()), "micro_batches: a positive integer or inf"
    assert w.defaults.state_sharding in STATE_SHARDINGS
    assert w.description and "\n" not in w.description


@pytest.mark.parametrize("name", SPARSE_MODELS)
def test_sparse_models_have_embedding_tables_of_hundreds_of_gib_first_and_dense_layers_after(name):
    w = build_workload(name)
    assert total(w, "sparse_param_bytes") >= 100 * GiB
    assert w.layers[0].kind == "sparse"
    assert any(layer.kind == "dense" for layer in w.layers)
    first_dense = next(i for i, layer in enumerate(w.layers) if layer.kind == "dense")
    assert all(layer.kind == "dense" for layer in w.layers[first_dense:]) or name == "word2vec-nce"
    assert all(layer.sparse_param_bytes > 0 for layer in w.layers if layer.kind == "sparse")


@pytest.mark.parametrize("name", SPARSE_MODELS)
def test_sparse_models_read_kibs_of_raw_feature_ids_per_sample(name):
    io = total(build_workload(name), "io_bytes")
    assert 1024 <= io <= 16 * 1024


@pytest.mark.parametrize("name", SPARSE_MODELS)
def test_sparse_models_job_defaults_are_in_the_ctr_range(name):
    d = build_workload(name).defaults
    assert 4096 <= d.batch <= 8192
    assert 10_000 <= d.throughput <= 1_000_000
    assert 1e9 <= d.samples <= 1e10


def test_resnet50_forward_is_4_1_g_multiply_adds_per_image_and_25_6_m_parameters():
    # The published "4.1 GFLOPs" of ResNet-50 counts multiply-adds; hps counts 2 FLOP per
    # multiply-add (as `dense` does), so forward FLOP = flops / 3 and multiply-adds = that / 2.
    w = build_workload("resnet50")
    forward_macs = total(w, "flops") / 3 / 2
    assert forward_macs == pytest.approx(4.1e9, rel=0.10)
    assert total(w, "dense_param_bytes") / 4 == pytest.approx(25.6e6, rel=0.05)
    assert total(w, "sparse_param_bytes") == 0
    assert w.layers[0].io_bytes >= 224 * 224 * 3


def test_bert_base_has_about_110_m_parameters_and_is_dense():
    w = build_workload("bert-base")
    assert total(w, "dense_param_bytes") / 4 == pytest.approx(110e6, rel=0.05)
    assert all(layer.kind == "dense" for layer in w.layers)
    assert len(w.layers) == 1 + 2 * 12 + 1


def test_bert_sequence_length_scales_attention_quadratically_and_ffn_linearly():
    short, long = build_workload("bert-base"), build_workload("bert-base", seq_len=512)
    by_name = {layer.name: layer for layer in short.layers}
    for layer in long.layers:
        if layer.name.endswith(".ffn"):
            assert layer.flops == pytest.approx(4 * by_name[layer.name].flops)
        if layer.name.endswith(".attention"):
            assert layer.flops > 4 * by_name[layer.name].flops
            assert layer.dense_param_bytes == by_name[layer.name].dense_param_bytes


def test_dense_builder_hand_computed():
    layer = dense("fc", 100, 10)
    assert layer.kind == "dense"
    assert layer.flops == 3 * 2 * 100 * 10  # 6,000
    assert layer.dense_param_bytes == (100 * 10 + 10) * 4  # 4,040
    assert layer.sparse_param_bytes == 0
    assert layer.mem_bytes == 3 * (100 + 10) * 4  # 1,320
    assert layer.act_bytes == 10 * 4
    assert layer.io_bytes == 0


def test_embedding_builder_hand_computed():
    layer = embedding("emb", slots=2, ids_per_slot=3, rows=1000, dim=8)
    lookups = 2 * 3
    assert layer.kind == "sparse"
    assert layer.sparse_param_bytes == 1000 * 8 * 4  # 32,000
    assert layer.dense_param_bytes == 0
    assert layer.flops == 3 * lookups * 8  # 144: pooling adds, gradient scatter, update
    assert layer.mem_bytes == 3 * lookups * 8 * 4  # 576: rows read, then read + written
    assert layer.io_bytes == lookups * 8 + 4  # 52: int64 ids + the label
    assert layer.act_bytes == 2 * 8 * 4  # 64: one pooled vector per slot


def test_unpooled_embedding_outputs_every_looked_up_vector():
    layer = embedding("emb", slots=2, ids_per_slot=3, rows=1000, dim=8, pooled=False, label_bytes=0.0)
    assert layer.act_bytes == 6 * 8 * 4
    assert layer.io_bytes == 6 * 8


def test_ctr_dnn_table_follows_its_hyperparameters():
    w = build_workload("ctr-dnn")
    names = [layer.name for layer in w.layers]
    assert names == ["embedding", "concat", "fc1", "fc2", "fc3", "fc_out", "loss"]
    emb = w.layers[0]
    assert emb.sparse_param_bytes == 2e9 * 64 * 4
    assert emb.act_bytes == (26 * 64 + 13) * 4
    assert w.layers[2].dense_param_bytes == ((26 * 64 + 13) * 512 + 512) * 4


def test_doubling_embedding_rows_doubles_sparse_param_bytes():
    base = build_workload("ctr-dnn")
    doubled = build_workload("ctr-dnn", rows=4e9)
    assert total(doubled, "sparse_param_bytes") == 2 * total(base, "sparse_param_bytes")
    assert total(doubled, "flops") == total(base, "flops")

    dlrm, dlrm2 = build_workload("dlrm"), build_workload("dlrm", rows_per_table=80_000_000)
    assert total(dlrm2, "sparse_param_bytes") == 2 * total(dlrm, "sparse_param_bytes")


def test_overriding_hidden_widths_changes_the_mlp():
    w = build_workload("ctr-dnn", hidden=[256, 64])
    assert [layer.name for layer in w.layers] == ["embedding", "concat", "fc1", "fc2", "fc_out", "loss"]
    assert w.layers[3].dense_param_bytes == (256 * 64 + 64) * 4


def test_overriding_ids_per_slot_scales_input_io():
    base = build_workload("ctr-dnn").layers[0]
    more = build_workload("ctr-dnn", ids_per_slot=20).layers[0]
    assert more.io_bytes - base.io_bytes == 26 * 10 * 8


def test_unknown_workload_name_raises_config_error_listing_the_known_ones():
    with pytest.raises(ConfigError) as err:
        build_workload("nope")
    assert err.value.field == "name"
    assert "unknown workload 'nope'" in str(err.value)
    assert "ctr-dnn" in str(err.value)


def test_unknown_override_raises_config_error():
    with pytest.raises(ConfigError) as err:
        build_workload("ctr-dnn", rowz=5)
    assert "rowz" in str(err.value)


@pytest.mark.parametrize(
    "key, value",
    [("rows", -1), ("dim", 2.5), ("hidden", []), ("hidden", "512"), ("rows", float("nan")), ("slots", True)],
)
def test_bad_override_values_raise_config_error(key, value):
    with pytest.raises(ConfigError):
        build_workload("ctr-dnn", **{key: value})


def test_list_workloads_names_every_zoo_entry_with_a_description():
    listed = list_workloads()
    assert [name for name, _ in listed] == list(ZOO)
    assert all(description for _, description in listed)
    assert {"ctr-dnn", "wide-deep", "deepfm", "dlrm", "matchnet", "word2vec-nce", "resnet50", "bert-base"} <= set(ZOO)


def test_resolve_workload_builds_from_the_zoo_when_no_such_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_workload("dlrm") == build_workload("dlrm")
    with pytest.raises(ConfigError):
        resolve_workload("no-such-model")


def test_resolve_workload_loads_an_existing_file(tmp_path, monkeypatch):
    loaders = pytest.importorskip("hps.config.loaders")
    path = tmp_path / "w.toml"
    path.write_text(
        'name = "tiny"\n[[layer]]\nname = "embedding"\nkind = "sparse"\nflops = 1.0\nmem_bytes = 2.0\n'
        "io_bytes = 3.0\nact_bytes = 4.0\ndense_param_bytes = 0.0\nsparse_param_bytes = 5.0\n"
    )
    assert resolve_workload(str(path)) == loaders.load_workload(str(path))
