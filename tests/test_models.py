"""Flax models of zoo workloads (docs/executor.md, "Models"): one
NNX module per layer-table row with the table's names and parameter bytes, built from the same
hyperparameters; laptop-sized presets; `--set NAME=VALUE` overrides."""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

from hps import ConfigError
from hps.cli.common import parse_set
from hps.cli.main import main
from hps.models.base import LayeredModel, parameter_bytes
from hps.models.registry import build_model, build_model_and_workload, model_workloads
from hps.workloads import PRESETS, build_workload, hyperparameters, resolve_workload

LAPTOP_MODELS = ["ctr-dnn-small", "dlrm-small", "matchnet-small", "mlp", "transformer-small"]


@functools.cache
def built(name):
    """(model, table) of a zoo workload, built once for this module (tests do not mutate them)."""
    return build_model_and_workload(name)


@pytest.fixture(params=LAPTOP_MODELS)
def model_and_table(request):
    return built(request.param)


def test_every_model_family_and_its_small_variant_has_a_flax_model():
    assert set(LAPTOP_MODELS) | {"ctr-dnn", "dlrm", "matchnet", "transformer"} <= set(model_workloads())
    assert "resnet50" not in model_workloads()


def test_model_has_one_layer_module_per_table_row_named_as_the_table(model_and_table):
    model, table = model_and_table
    assert isinstance(model, LayeredModel)
    assert model.layer_names == tuple(layer.name for layer in table.layers)
    assert len(model.layers) == len(table.layers)


def test_each_layers_parameter_bytes_equal_the_tables_exactly(model_and_table):
    # nnx.Embed parameters are the table's sparse_param_bytes, every other Param dense.
    model, table = model_and_table
    for layer, row in zip(model.layers, table.layers):
        assert parameter_bytes(layer) == (row.dense_param_bytes, row.sparse_param_bytes), row.name
        assert (row.sparse_param_bytes > 0) == (row.kind == "sparse"), row.name


def test_sample_batch_feeds_the_first_layer_and_the_last_returns_a_finite_per_example_loss(model_and_table):
    model, _ = model_and_table
    batch = model.sample_batch(jax.random.key(1), 8)
    assert "label" in batch
    assert all(value.shape[0] == 8 for value in batch.values())
    loss = nnx.jit(lambda m, b: m(b))(model, batch)
    assert loss.shape == (8,) and loss.dtype == jnp.float32
    assert bool(jnp.all(jnp.isfinite(loss)))


@pytest.mark.parametrize(
    "name, limits",
    [
        ("ctr-dnn-small", {"ids": "rows"}),
        ("dlrm-small", {"ids": "rows_per_table"}),
        ("matchnet-small", {"query_ids": "query_rows", "item_ids": "item_rows"}),
        ("transformer-small", {"tokens": "vocab"}),
    ],
)
def test_sampled_ids_are_in_range_of_their_table(name, limits):
    batch = built(name)[0].sample_batch(jax.random.key(2), 256)
    values = hyperparameters(name)
    for key, rows in limits.items():
        assert batch[key].dtype == jnp.int32
        assert 0 <= int(batch[key].min()) and int(batch[key].max()) < values[rows], key


def test_small_variants_are_presets_of_their_family_under_a_million_parameters():
    for preset in PRESETS:
        small = build_workload(preset.name)
        family = build_workload(preset.base, **preset.hyperparameters)
        assert small.name == preset.name and small.layers == family.layers
        params = sum(layer.dense_param_bytes + layer.sparse_param_bytes for layer in small.layers) / 4
        assert params < 250_000, preset.name


def test_overrides_change_model_and_table_alike():
    model, table = build_model_and_workload("dlrm-small", {"top": (16,), "tables": 3})
    assert model.layer_names == tuple(layer.name for layer in table.layers)
    assert "top_fc2" not in model.layer_names
    for layer, row in zip(model.layers, table.layers):
        assert parameter_bytes(layer) == (row.dense_param_bytes, row.sparse_param_bytes), row.name
    assert model.sample_batch(jax.random.key(0), 4)["ids"].shape[1] == 3


def test_a_workload_without_a_flax_model_is_a_config_error_naming_the_ones_that_exist():
    with pytest.raises(ConfigError, match="no Flax model.*ctr-dnn-small"):
        build_model("resnet50")


def test_production_sized_defaults_are_refused_before_allocating_hundreds_of_gib():
    with pytest.raises(ConfigError, match="GiB"):
        build_model("ctr-dnn")


def test_bad_model_override_is_a_config_error_naming_its_source():
    with pytest.raises(ConfigError) as err:
        build_model("ctr-dnn-small", source="--set", rowz=3)
    assert err.value.source == "--set" and "rowz" in err.value.field


def test_training_steps_on_ctr_dnn_small_lower_the_loss():
    model, _ = built("ctr-dnn-small")
    batch = model.sample_batch(jax.random.key(0), 64)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    tx = optax.adam(1e-2)

    @jax.jit
    def step(params, opt_state):
        loss, grads = jax.value_and_grad(lambda p: nnx.merge(graphdef, p, rest)(batch).mean())(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    opt_state = tx.init(params)
    losses = []
    for _ in range(20):
        params, opt_state, loss = step(params, opt_state)
        losses.append(float(loss))
    assert all(map(jnp.isfinite, losses))
    assert losses[-1] < 0.5 * losses[0]


# --- --set NAME=VALUE -------------------------------------------------------------------------------


def test_set_parses_integers_numbers_and_comma_lists_of_integers():
    assert parse_set(["rows=10000", "dim=8", "hidden=64,32", "scale=1e4", "one=16,"]) == {
        "rows": 10000,
        "dim": 8,
        "hidden": (64, 32),
        "scale": 1e4,
        "one": (16,),
    }
    assert parse_set([]) == {}


@pytest.mark.parametrize("item", ["rows", "=3", "rows=", "rows=abc", "hidden=64,x", "hidden=1.5,2"])
def test_malformed_set_is_a_config_error_naming_the_flag(item):
    with pytest.raises(ConfigError) as err:
        parse_set([item])
    assert err.value.source == "--set"


def test_set_twice_for_one_name_is_an_error():
    with pytest.raises(ConfigError, match="given twice"):
        parse_set(["dim=8", "dim=16"])


def test_set_values_override_zoo_hyperparameters_and_a_single_width_is_one_layer():
    workload = resolve_workload("ctr-dnn-small", parse_set(["hidden=16", "rows=2e4"]), source="--set")
    assert [layer.name for layer in workload.layers] == ["embedding", "concat", "fc1", "fc_out", "loss"]
    assert workload.layers[0].sparse_param_bytes == 2e4 * 8 * 4
    with pytest.raises(ConfigError) as err:
        resolve_workload("ctr-dnn-small", parse_set(["dim=-1"]), source="--set")
    assert err.value.source == "--set" and err.value.field == "ctr-dnn-small.dim"


def test_set_does_not_apply_to_a_workload_file(tmp_path):
    path = tmp_path / "w.toml"
    assert main(["workload", "export", "mlp", "--out", str(path)]) == 0
    with pytest.raises(ConfigError, match="zoo workloads"):
        resolve_workload(str(path), {"hidden": (8,)}, source="--set")


def test_every_instance_command_takes_set(capsys):
    argv = [
        "evaluate",
        "--catalog",
        "small",
        "--workload",
        "ctr-dnn-small",
        "--schedule",
        "cpu,cpu,cpu,cpu,cpu",
        "--set",
        "hidden=16",
        "--json",
    ]
    assert main(argv) == 0
    assert len(json.loads(capsys.readouterr().out)["stages"]) == 1
    assert main([*argv[:-3], "--set", "hidden=oops", "--json"]) == 2
    assert "--set" in capsys.readouterr().err
