"""The zoo's transformer tables for planning LLM training in the 3D-parallel space (docs/llm-tables.md):
16-bit activations, FlashAttention traffic, activation stash from Korthikanti et al. (MLSys 2023)
Eq. 1, Megatron-LM tensor-parallel All-Reduces, a block as one pipeline unit, and the published
runs' job defaults. Every expected value is computed here from the formulas, not copied from the
builders."""

from __future__ import annotations

import pytest

from hps.workloads import build_workload
from hps.workloads.transformer_layers import Numerics, attention_block, ffn_block

BF16, FP32, MASK = 2.0, 4.0, 1.0
LLMS = ("gpt3-175b", "llama3-70b", "llama3-405b", "transformer-1t")
TRANSFORMERS = (*LLMS, "bert-base", "transformer", "transformer-small")


def rows(name: str, **overrides):
    return {layer.name: layer for layer in build_workload(name, **overrides).layers}


def test_a_gpt3_block_keeps_34_s_h_bytes_korthikanti_eq_1_without_the_attention_score_term():
    s, h = 2048, 12288
    w = rows("gpt3-175b")
    block = w["layer1.attention"].stash_bytes + w["layer1.ffn"].stash_bytes
    assert block == pytest.approx(34 * s * h, rel=1e-12)
    assert w["layer1.attention"].stash_bytes == pytest.approx((11 + 2) * s * h)  # attention + its LayerNorm input
    assert w["layer1.ffn"].stash_bytes == pytest.approx((19 + 2) * s * h)  # 4h GELU MLP + its LayerNorm input


def test_standard_attention_at_16_bits_with_dropout_keeps_eq_1_s_h_34_plus_5_a_s_over_h():
    s, h, a = 64, 128, 4
    numerics = Numerics(BF16, flash=False, dropout=True)
    attention = attention_block("a", s, h, a, numerics=numerics)
    ffn = ffn_block("f", s, h, 4 * h, numerics=numerics)
    assert attention.stash_bytes + ffn.stash_bytes == pytest.approx(s * h * (34 + 5 * a * s / h))
    flash = attention_block("a", s, h, a, numerics=Numerics(BF16, flash=True, dropout=True))
    assert flash.stash_bytes + ffn.stash_bytes == pytest.approx(s * h * 34)
    assert flash.flops == attention.flops  # FlashAttention changes traffic and memory, not the FLOP count


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_a_block_is_one_pipeline_unit_the_attention_row_may_not_end_a_stage(name):
    w = build_workload(name)
    for layer in w.layers:
        assert layer.cut_after == (not layer.name.endswith(".attention")), layer.name
    assert w.layers[0].cut_after and w.layers[-1].cut_after  # embedding and head: cuts allowed after


@pytest.mark.parametrize("name", LLMS)
def test_flash_attention_traffic_has_no_s_squared_term_doubling_seq_len_at_most_doubles_it(name):
    short, long = rows(name, seq_len=2048)["layer1.attention"], rows(name, seq_len=4096)["layer1.attention"]
    for key in ("mem_bytes", "stash_bytes", "act_bytes", "tp_comm_bytes"):
        assert getattr(long, key) <= 2 * getattr(short, key) * (1 + 1e-12), key
    assert long.flops > 2 * short.flops  # the scores' FLOPs (4 S^2 H) are still counted


@pytest.mark.parametrize("name, s, h", [("gpt3-175b", 2048, 12288), ("llama3-70b", 8192, 8192)])
def test_tensor_parallel_traffic_per_block_is_four_all_reduces_of_s_h_values(name, s, h):
    w = rows(name)
    attention, ffn = w["layer1.attention"], w["layer1.ffn"]
    assert attention.tp_comm_bytes + ffn.tp_comm_bytes == pytest.approx(4 * s * h * BF16)
    assert attention.tp_comm_bytes == ffn.tp_comm_bytes == pytest.approx(2 * s * h * BF16)
    assert attention.tp_collectives == ffn.tp_collectives == 2


def test_gpt3_175b_rows_hand_computed():
    s, h, a, v = 2048, 12288, 96, 50257
    f = 4 * h
    w = rows("gpt3-175b")
    emb, att, ffn, head = w["embedding"], w["layer1.attention"], w["layer1.ffn"], w["head"]
    # embedding: word + position rows summed (one add), no LayerNorm; bf16 values; dropout mask kept
    assert emb.act_bytes == s * h * BF16
    assert emb.mem_bytes == 3 * (2 + 1) * s * h * BF16
    assert emb.stash_bytes == s * h * MASK
    assert (emb.tp_comm_bytes, emb.tp_collectives) == (s * h * BF16, 1)
    # attention: FLOPs as before (3x forward), FlashAttention traffic 35 s h values
    assert att.flops == pytest.approx(3 * (8 * s * h * h + 4 * s * s * h + 5 * a * s * s + 10 * s * h))
    assert att.mem_bytes == pytest.approx((15 + 20) * s * h * BF16)  # forward 15, backward 20 values of s h
    assert att.act_bytes == s * h * BF16
    # FFN: 4h GELU
    assert ffn.flops == pytest.approx(3 * (4 * s * h * f + 8 * s * f + 10 * s * h))
    assert ffn.mem_bytes == pytest.approx(3 * (5 * s * h + 4 * s * f) * BF16)
    assert ffn.act_bytes == s * h * BF16
    # head: final LayerNorm input and projection input in bf16, logits in fp32; tied matrix
    assert head.stash_bytes == pytest.approx(2 * s * h * BF16 + 4 * s * v)
    assert head.tp_comm_bytes == pytest.approx(s * h * BF16 + 3 * 4 * s)
    assert head.tp_collectives == 4
    assert head.mem_bytes == pytest.approx(3 * (3 * s * h + 2 * s * v) * BF16)
    assert head.act_bytes == FP32


@pytest.mark.parametrize("name, h, f", [("llama3-70b", 8192, 28672), ("llama3-405b", 16384, 53248)])
def test_llama_swiglu_and_grouped_query_stash_from_their_shapes_without_dropout_masks(name, h, f):
    s, kv = 8192, 8 * 128  # 8 KV heads of 128
    w = rows(name)
    # attention: LayerNorm input, QKV input, Q, output-projection input (width h) and K, V (width kv)
    assert w["layer1.attention"].stash_bytes == pytest.approx(BF16 * s * (4 * h + 2 * kv))
    assert w["layer1.attention"].mem_bytes == pytest.approx(BF16 * (25 * s * h + 10 * s * kv))
    # SwiGLU: LayerNorm input, up/gate input; gate and up outputs, down input (width f); swish(gate) recomputed
    assert w["layer1.ffn"].stash_bytes == pytest.approx(BF16 * (2 * s * h + 3 * s * f))  # fused SwiGLU
    assert w["layer1.ffn"].mem_bytes == pytest.approx(3 * (5 * s * h + 6 * s * f) * BF16)
    assert w["embedding"].stash_bytes == 0  # no LayerNorm, no dropout: the lookup keeps only ids
    assert w["head"].stash_bytes == pytest.approx(2 * s * h * BF16 + 4 * s * 128_256)


def test_torchtitans_op_level_selective_policy_recomputes_the_k_output_and_up_projections():
    # torchtitan's policy counts a block's matmuls Q, K, V, O, gate, up, down and recomputes the even ones
    s, h, kv, f = 8192, 4096, 8 * 128, 14336
    plain, titan = rows("llama3-8b"), rows("llama3-8b", selective_alternate_matmuls=True)
    attention, ffn = titan["layer1.attention"], titan["layer1.ffn"]
    assert attention.selective_flops == pytest.approx(2 * s * h * kv + 2 * s * h * h)
    assert ffn.selective_flops == pytest.approx(2 * s * h * f)
    assert attention.selective_stash_bytes == pytest.approx(BF16 * s * (3 * h + kv))  # input, Q, V, flash output
    assert ffn.selective_stash_bytes == pytest.approx(BF16 * s * (f + h))  # gate and down outputs
    assert plain["layer1.attention"].selective_flops == 0 and plain["layer1.ffn"].selective_flops == 0
    for name in ("layer1.attention", "layer1.ffn", "head"):
        assert titan[name].flops == plain[name].flops and titan[name].stash_bytes == plain[name].stash_bytes


@pytest.mark.parametrize("overrides", [{"flash_attention": False}, {"gated_ffn": False}])
def test_the_op_level_policy_needs_flash_attention_and_a_swiglu_ffn(overrides):
    from hps.errors import ConfigError

    with pytest.raises(ConfigError, match="selective_alternate_matmuls"):
        build_workload("llama3-8b", selective_alternate_matmuls=True, **overrides)


@pytest.mark.parametrize("name", LLMS)
def test_language_model_jobs_train_in_bf16_adam_with_zero_1_and_no_recomputation(name):
    d = build_workload(name).defaults
    assert (d.precision, d.zero, d.recompute) == ("bf16-adam", 1, "none")


def test_micro_batches_of_the_published_megatron_runs_and_none_where_unpublished():
    gpt3 = build_workload("gpt3-175b").defaults  # tensor 8 x pipeline 16 at 1536 GPUs: 12 replicas x 1
    assert gpt3.micro_batch == 1536 // (8 * 16) * 1 == 12
    assert gpt3.batch / gpt3.micro_batch == gpt3.micro_batches == 128
    trillion = build_workload("transformer-1t").defaults  # tensor 8 x pipeline 64 on 3072 GPUs: 6 x 1
    assert trillion.micro_batch == 3072 // (8 * 64) * 1 == 6
    assert trillion.batch / trillion.micro_batch == trillion.micro_batches == 512
    assert build_workload("llama3-70b").defaults.micro_batch is None
    assert build_workload("llama3-405b").defaults.micro_batch is None


def test_fp32_encoders_keep_their_activation_and_traffic_numbers():
    s, h, a = 128, 768, 12
    w = rows("bert-base")
    att, ffn = w["layer1.attention"], w["layer1.ffn"]
    assert att.act_bytes == s * h * FP32
    assert att.mem_bytes == pytest.approx(3 * (12 * s * h + 4 * a * s * s) * FP32)  # the S x S scores
    assert ffn.mem_bytes == pytest.approx(3 * (5 * s * h + 4 * s * 4 * h) * FP32)
    # stash with BERT's dropout: 6 values + mask of s h, softmax output + mask + dropped-out probabilities
    assert att.stash_bytes == pytest.approx(6 * s * h * FP32 + s * h * MASK + (2 * FP32 + MASK) * a * s * s)
    assert ffn.stash_bytes == pytest.approx(2 * s * h * FP32 + 2 * s * 4 * h * FP32 + s * h * MASK)
    assert w["embedding"].stash_bytes == pytest.approx(s * h * FP32 + s * h * MASK)  # LayerNorm input, mask


def test_non_transformer_layers_keep_the_model_defaults_for_the_parallel_fields():
    for name in ("gnmt", "resnet50", "ctr-dnn", "mlp"):
        for layer in build_workload(name).layers:
            assert layer.stash_bytes is None and layer.tp_comm_bytes is None and layer.tp_collectives == 1
            assert layer.cut_after


def test_parameter_counts_keep_4_bytes_a_parameter_gpt3_by_hand():
    h, layers, v, s = 12288, 96, 50257, 2048
    attention = 4 * h * h + 4 * h + 2 * h  # Q, K, V, output weights and biases, LayerNorm
    ffn = 2 * h * 4 * h + 4 * h + h + 2 * h  # two matrices, biases, LayerNorm
    expected = (v + s) * h + layers * (attention + ffn) + 2 * h  # tables, blocks, final LayerNorm (tied head)
    w = build_workload("gpt3-175b")
    assert sum(layer.dense_param_bytes for layer in w.layers) == FP32 * expected
