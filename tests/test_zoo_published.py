"""The zoo's published architectures: GPT-3 175B, Llama 3 70B and 405B, Transformer-1T (Megatron-LM),
GNMT and ResNet-152, checked against the papers' parameter counts and the 6 N FLOP-per-token rule."""

from __future__ import annotations

import math
import tomllib

import pytest

from hps import ConfigError
from hps.config.limits import MAX_WORKLOAD_LAYERS
from hps.config.loaders import parse_workload, workload_to_toml
from hps.workloads import build_workload, hyperparameters, resolve_workload
from hps.workloads.layers import token_embedding
from hps.workloads.recurrent_layers import additive_attention, lstm
from hps.workloads.transformer_layers import attention_block, ffn_block, lm_head

FP32 = 4.0
LLMS = {  # name: (published parameters, rows = embedding + 2 per layer + head, sequence length)
    "gpt3-175b": (175e9, 1 + 2 * 96 + 1, 2048),
    "llama3-70b": (70.6e9, 1 + 2 * 80 + 1, 8192),
    "llama3-405b": (405e9, 1 + 2 * 126 + 1, 8192),
    "transformer-1t": (1008e9, 1 + 2 * 128 + 1, 2048),
}


def parameters(name: str, **overrides) -> float:
    layers = build_workload(name, **overrides).layers
    return sum(layer.dense_param_bytes + layer.sparse_param_bytes for layer in layers) / FP32


def total_flops(name: str) -> float:
    return sum(layer.flops for layer in build_workload(name).layers)


@pytest.mark.parametrize("name", sorted(LLMS))
def test_each_language_model_has_its_published_parameter_count_within_2_percent(name):
    assert parameters(name) == pytest.approx(LLMS[name][0], rel=0.02)


@pytest.mark.parametrize("name", sorted(LLMS))
def test_language_model_training_flops_per_token_are_6_n_plus_the_attention_scores(name):
    # Forward + backward is 6 FLOP per parameter and token; attention scores and context add
    # 3 * 4 * S * H per layer and token, the rest (norms, softmax, activations) under 1%.
    n, _, seq_len = LLMS[name]
    values = hyperparameters(name)
    per_token = total_flops(name) / seq_len
    assert 1.0 <= per_token / (6 * parameters(name)) <= 1.15
    attention = 12 * values["layers"] * seq_len * values["hidden"]
    assert per_token == pytest.approx(6 * parameters(name) + attention, rel=0.02)


@pytest.mark.parametrize("name", sorted(LLMS))
def test_language_models_have_an_embedding_two_rows_per_layer_and_a_head_and_load_from_files(name):
    w = resolve_workload(name)
    names = [layer.name for layer in w.layers]
    assert len(names) == LLMS[name][1] <= MAX_WORKLOAD_LAYERS
    assert parse_workload(tomllib.loads(workload_to_toml(w)), name) == w
    assert names[0] == "embedding" and names[-1] == "head"
    assert names[1:3] == ["layer1.attention", "layer1.ffn"]
    assert all(layer.kind == "dense" for layer in w.layers)


@pytest.mark.parametrize("name", sorted(LLMS))
def test_language_model_jobs_pipeline_with_finite_micro_batches_and_may_shard_state(name):
    d = build_workload(name).defaults
    assert d.state_sharding == "auto"
    assert 1 <= d.micro_batches < math.inf and float(d.micro_batches).is_integer()
    days = d.samples / d.throughput / 86400
    assert 20 <= days <= 90, "a floor that trains the published run in one to three months"


def test_published_training_runs_set_the_language_model_jobs():
    gpt3 = build_workload("gpt3-175b").defaults
    assert gpt3.batch * 2048 == pytest.approx(3.2e6, rel=0.05)  # 3.2 M tokens per batch
    assert gpt3.samples * 2048 == pytest.approx(300e9)  # 300 B tokens
    llama = build_workload("llama3-405b").defaults
    assert llama.batch * 8192 == pytest.approx(16 * 2**20, rel=0.05)  # 16 M tokens per batch
    assert llama.samples * 8192 == pytest.approx(15.6e12)
    trillion = build_workload("transformer-1t").defaults
    assert trillion.batch == 3072 and trillion.samples * 2048 == pytest.approx(450e9)


def test_llama_uses_grouped_query_attention_swiglu_and_an_untied_head():
    w = build_workload("llama3-70b")
    attention, ffn = w.layers[1], w.layers[2]
    h, kv = 8192, 8 * 8192 // 64
    assert attention.dense_param_bytes == (2 * h * h + 2 * h * kv + 2 * h + 2 * kv + 2 * h) * FP32
    assert ffn.dense_param_bytes == (3 * h * 28672 + 2 * h) * FP32
    assert w.layers[-1].dense_param_bytes == (2 * h + h * 128_256) * FP32
    assert w.layers[0].dense_param_bytes == 128_256 * h * FP32  # no position table: rotary


def test_gpt3_ties_its_head_to_the_word_embedding_and_learns_positions():
    w = build_workload("gpt3-175b")
    assert w.layers[0].dense_param_bytes == (50257 + 2048) * 12288 * FP32
    assert w.layers[-1].dense_param_bytes == 2 * 12288 * FP32


def test_grouped_query_attention_with_as_many_kv_heads_as_heads_is_multi_head_attention():
    assert attention_block("a", 16, 64, 4, kv_heads=4) == attention_block("a", 16, 64, 4)
    fewer = attention_block("a", 16, 64, 4, kv_heads=1)
    assert fewer.dense_param_bytes < attention_block("a", 16, 64, 4).dense_param_bytes


def test_swiglu_ffn_hand_computed():
    layer = ffn_block("f", seq_len=2, hidden=4, ffn=8, gated=True)
    assert layer.flops == 3 * (2 * 3 * 2 * 4 * 8 + 8 * 2 * 8 + 10 * 2 * 4)  # 1,824
    assert layer.dense_param_bytes == (3 * 4 * 8 + 2 * 4) * FP32  # 416
    assert layer.mem_bytes == 3 * (5 * 2 * 4 + 6 * 2 * 8) * FP32  # 1,632


def test_lm_head_and_token_embedding_hand_computed():
    head = lm_head("h", seq_len=2, hidden=4, vocab=10, tied=False)
    assert head.flops == 3 * (10 * 2 * 4 + 2 * 2 * 4 * 10 + 5 * 2 * 10)  # 1,500
    assert head.dense_param_bytes == (2 * 4 + 4 * 10) * FP32
    assert lm_head("h", 2, 4, 10, tied=True).dense_param_bytes == 2 * 4 * FP32
    emb = token_embedding("e", seq_len=3, hidden=4, tables=(10, 3), ids_per_token=1, layer_norm=False, label_bytes=8)
    assert emb.dense_param_bytes == 13 * 4 * FP32
    assert emb.flops == 3 * 1 * 3 * 4  # one add per element
    assert emb.io_bytes == 3 * 8 + 8  # the tokens and the last label


def test_kv_heads_that_do_not_divide_heads_raise_config_error_naming_the_entry():
    with pytest.raises(ConfigError) as err:
        build_workload("llama3-70b", kv_heads=7)
    assert err.value.field == "llama3-70b.kv_heads"


def test_lstm_builder_hand_computed():
    layer = lstm("l", steps=2, d_in=3, hidden=4, directions=2)
    assert layer.flops == 3 * 2 * 2 * (8 * 4 * (3 + 4) + 20 * 4)  # 2,112
    assert layer.dense_param_bytes == 2 * (4 * 4 * (3 + 4) + 4 * 4) * FP32  # 1,024
    assert layer.act_bytes == 2 * 2 * 4 * FP32
    attention = additive_attention("a", queries=2, keys=3, hidden=4)
    assert attention.dense_param_bytes == (2 * 16 + 2 * 4 + 1) * FP32
    assert attention.act_bytes == 2 * 2 * 4 * FP32


def gnmt_parameters_by_hand(encoder: int, decoder: int, h: int, vocab: int, shared: bool) -> float:
    """Wu et al.'s GNMT from its parts: embeddings, softmax, LSTMs (4 h (d_in + h) + 4 h each),
    normalized additive attention (2 h^2 + 2 h + 1)."""
    cell = lambda d_in: 4 * h * (d_in + h) + 4 * h
    encoders = 2 * cell(h) + cell(2 * h) + (encoder - 2) * cell(h)
    decoders = cell(h) + (decoder - 1) * cell(2 * h)
    embeddings = (1 if shared else 2) * vocab * h
    return embeddings + encoders + decoders + (2 * h * h + 2 * h + 1) + h * vocab + vocab


def test_gnmt_has_wu_et_al_s_277_m_parameters_and_mlperf_s_4_layer_model_160_m():
    assert parameters("gnmt") == pytest.approx(gnmt_parameters_by_hand(8, 8, 1024, 32_000, False), rel=1e-9)
    assert parameters("gnmt") == pytest.approx(277e6, rel=0.02)
    mlperf = dict(encoder_layers=4, decoder_layers=4, shared_embedding=True)
    assert parameters("gnmt", **mlperf) == pytest.approx(160e6, rel=0.02)


def test_gnmt_rows_and_job():
    w = build_workload("gnmt")
    names = [layer.name for layer in w.layers]
    assert names[:2] == ["source_embedding", "encoder1"] and names[-1] == "classifier"
    assert names.index("attention") == names.index("decoder1") + 1
    assert len(names) == 1 + 8 + 1 + 8 + 1 + 1
    assert w.defaults.micro_batches == math.inf and w.defaults.state_sharding == "none"
    with pytest.raises(ConfigError):
        build_workload("gnmt", decoder_layers=1)


def test_resnet152_has_60_2_m_parameters_11_5_g_multiply_adds_and_shares_resnet50_s_builder():
    w = build_workload("resnet152")
    assert parameters("resnet152") == pytest.approx(60.2e6, rel=0.02)
    assert sum(layer.flops for layer in w.layers) / 3 / 2 == pytest.approx(11.5e9, rel=0.05)
    assert len(w.layers) == 1 + (3 + 8 + 36 + 3) + 2
    assert w.layers == build_workload("resnet50", blocks=(3, 8, 36, 3)).layers
    assert w.description.startswith("ResNet-152 ")


@pytest.mark.parametrize("name", [*sorted(LLMS), "gnmt", "resnet152"])
def test_published_models_are_plan_only_the_executor_refuses_them_with_a_config_error(name):
    registry = pytest.importorskip("hps.models.registry")
    with pytest.raises(ConfigError, match="has no Flax model"):
        registry.build_model(name)
