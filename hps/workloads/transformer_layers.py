"""Pure builders of transformer rows: the input embedding, the attention and FFN halves of a block,
and the heads. Per-sample numbers in the units of `hps.workloads.layers` (FLOP forward + backward,
bytes), plus the fields the parallel-plan model reads (`hps.config.types.Layer`): `stash_bytes`
(activation bytes per sample kept for the backward pass), `tp_comm_bytes` and `tp_collectives`
(what a tensor-parallel group All-Reduces per sample, forward and backward together) and
`cut_after` (no pipeline stage ends inside a block). docs/llm-tables.md derives every formula.

Notation: S = seq_len tokens per sample, H = hidden, a = heads, Hkv = K/V width (kv_heads * H / a),
F = FFN width, V = vocabulary, p = bytes per activation value (`Numerics.value_bytes`).

Sources: activation memory, Korthikanti et al., "Reducing Activation Recomputation in Large
Transformer Models" (MLSys 2023), Sec. 4 and Eq. 1 (per block, 16-bit values, dropout:
S·H·(34 + 5·a·S/H) bytes); FlashAttention, Dao et al. (NeurIPS 2022), which keeps neither the
S x S scores nor the softmax output nor its dropout mask (the 5·a·S/H term), recomputing them in
the backward pass; tensor-parallel traffic, Shoeybi et al., "Megatron-LM" (2019), Sec. 3.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from hps.config.types import Layer
from hps.workloads.layers import FP32_BYTES, FWD_BWD, LABEL_BYTES, dense, make_layer, merge_layers, token_embedding

MASK_BYTES = 1.0
"""Bytes per element of a dropout mask (Korthikanti et al. 2023, Sec. 4.1: one byte)."""
LOGIT_BYTES = FP32_BYTES
"""Bytes per logit the LM head keeps for the cross-entropy's backward: fp32, as Megatron-LM casts
the logits to fp32 before its vocabulary-parallel cross-entropy (Korthikanti et al. 2023, Sec. 4.3:
4·S·V bytes)."""
FP8_BYTES = 1.0
"""Bytes of an FP8 value: where the matmuls run in FP8, Transformer Engine saves each matmul's input
for the backward pass as its FP8 copy (`fp8_stash_bytes`)."""
LOSS_STATISTICS = 3
"""Per-token fp32 All-Reduces of a vocabulary-parallel cross-entropy (Megatron-LM's
`vocab_parallel_cross_entropy`): the logits' maximum, the target's logit, the sum of exponentials."""


@dataclass(frozen=True)
class Numerics:
    """How a transformer holds its activations.

    value_bytes: bytes per activation value or activation gradient (4 fp32; 2 bf16 or fp16).
    flash: attention computed as FlashAttention does: no S x S matrix is read, written or kept.
    dropout: the model applies dropout (after the input embedding, the attention and FFN output
    projections, and on the attention probabilities); each mask keeps one byte per element.
    alternate_matmuls: selective recomputation is torchtitan's op-level policy (its
    `selective_ac_option = "op"`) instead of Korthikanti et al.'s attention core: a block keeps
    the outputs of its odd-numbered matmuls and of FlashAttention, and its backward recomputes the
    even-numbered matmuls (K projection, output projection, FFN up projection) and every
    non-matmul op (FlashAttention only).
    """

    value_bytes: float = FP32_BYTES
    flash: bool = False
    dropout: bool = False
    alternate_matmuls: bool = False


FP32_STANDARD = Numerics()
"""fp32 activations, attention through an S x S score matrix, no dropout."""


def input_embedding(
    name: str,
    seq_len: int,
    hidden: int,
    tables: Sequence[int],
    numerics: Numerics = FP32_STANDARD,
    ids_per_token: int = 3,
    layer_norm: bool = True,
    label_bytes: float = LABEL_BYTES,
) -> Layer:
    """`hps.workloads.layers.token_embedding` at p = numerics.value_bytes per activation value, as
    the first row of a transformer, with the word table vocabulary-parallel (Megatron-LM):

    - stash_bytes = [layer_norm] p·S·H (LayerNorm input) + [dropout] 1·S·H (mask); the lookup
      itself keeps only the token ids (Korthikanti et al. 2023, Sec. 4.3).
    - tp_comm_bytes = p·S·H, tp_collectives = 1: each rank looks up its slice of the vocabulary and
      one forward All-Reduce sums the S·H output; the backward needs none (Shoeybi et al. 2019).
    """
    p, elems = numerics.value_bytes, seq_len * hidden
    layer = token_embedding(name, seq_len, hidden, tables, ids_per_token, layer_norm, label_bytes, value_bytes=p)
    stash = (p * int(layer_norm) + MASK_BYTES * int(numerics.dropout)) * elems
    return dataclasses.replace(layer, stash_bytes=stash, tp_comm_bytes=p * elems, tp_collectives=1)


def block_tp_bytes(seq_len: int, hidden: int, numerics: Numerics) -> float:
    """Bytes per sample one half of a block (attention or FFN) All-Reduces under tensor parallelism:
    one All-Reduce of the S·H activation forward (after the row-parallel output projection) and one
    of its gradient backward (before the column-parallel input projection), 2·S·H·p (Shoeybi et al.
    2019, Sec. 3, the g and f operators)."""
    return 2.0 * seq_len * hidden * numerics.value_bytes


def attention_block(
    name: str, seq_len: int, hidden: int, heads: int, kv_heads: int | None = None, numerics: Numerics = FP32_STANDARD
) -> Layer:
    """Self-attention half of a block (LayerNorm, Q, K, V projections, scores over S, softmax,
    context, output projection, residual add), grouped-query with `kv_heads` K/V heads of width
    H / a each (default a: multi-head), so K and V have width Hkv = kv_heads·H/a.

    - forward FLOP = 4 S H (H + Hkv) (projections) + 4 S^2 H (scores QK^T, context AV) + 5 a S^2
      (softmax) + 10 S H (residual, LayerNorm); flops = 3x that. FlashAttention recomputes the
      scores in its backward pass (one more 2 S^2 H); like Megatron-LM's and Llama 3's FLOP counts
      we keep 3x forward (model FLOPs, not hardware FLOPs).
    - dense_param_bytes = (2 H^2 + 2 H Hkv + 2 H + 2 Hkv + 2 H) * 4 (weights, biases, LayerNorm).
    - mem_bytes (activation traffic, values x p): flash: forward 11 S H + 4 S Hkv (LayerNorm reads x,
      writes x'; QKV reads x', writes Q, K, V; the kernel reads Q, K, V, writes O; the output
      projection reads O, writes y; the residual add reads x, y, writes the output) and backward
      14 S H + 6 S Hkv (output projection reads dy, O, writes dO; the kernel reads Q, K, V, O, dO,
      writes dQ, dK, dV; QKV reads dQ, dK, dV, x', writes dx'; LayerNorm reads x, dx', the residual
      gradient, writes dx): 25 S H + 10 S Hkv (MHA: 35 S H). Standard: 3 (10 S H + 2 S Hkv
      + 4 a S^2) (forward traffic with the S x S scores, softmax and context, x3).
    - serial_mem_bytes (standard attention only; flash: 0): the S^2 part of mem_bytes, 3·4 a S^2 p
      = 12 a S^2 p. Forward, a heads of S x S values go through HBM four times: the QK^T batched
      GEMM writes the scores, the softmax kernel (Megatron-LM's fused scale-mask-softmax) reads them
      and writes the probabilities, the AV batched GEMM reads them; x3 for the backward, as the rest
      of mem_bytes (the attention dropout's mask and dropped-out probabilities are not counted,
      as in mem_bytes). These are memory-bound kernels of their own, run between the matmuls, not
      under them: the model times them in series (`ParallelProblem.layer_times`). FlashAttention
      fuses them into one kernel that keeps the S x S tiles on chip.
    - act_bytes = S H p.
    - stash_bytes = p S (4 H + 2 Hkv) (LayerNorm input, QKV input, Q, K, V, output-projection input)
      (fp8_stash_bytes: the QKV and output-projection inputs as 1-byte FP8 copies, (p − 1) 2 S H less)
      + [dropout] 1 S H (mask after the output projection); standard attention adds the softmax
      output p a S^2, and with dropout its mask 1 a S^2 and the dropped-out probabilities p a S^2.
      Multi-head, p = 2, dropout: 13 S H + 5 a S^2 (Korthikanti et al. Eq. 1: 11 S H + 5 a S^2 and
      the LayerNorm's 2 S H); flash: 13 S H. FlashAttention's per-row softmax statistics (a S fp32)
      are left out (under 0.1% of a block for the zoo's LLMs).
    - selective recomputation (standard attention only; FlashAttention keeps no S^2 term to drop):
      selective_stash_bytes = stash_bytes less the S^2 terms (Korthikanti et al.'s selective
      activation recomputation drops the softmax output, its dropout mask and the dropped-out
      probabilities, 5 a S^2 bytes at p = 2 with dropout), and selective_flops = the recomputed
      forward attention core, 4 S^2 H (QK^T and AV, 2 S^2 H each: a heads of S x S x H/a
      multiply-adds) + 5 a S^2 (the softmax), once (the core's backward is in flops already).
      Korthikanti et al.'s hardware FLOPs count 12 S^2 H a block, three times this (their HFU/MFU,
      43.7/41.5 % at 22B and 52.8/51.4 % at 175B, Table 5, are (1 + s/3h + V/12hl)/(1 + s/6h +
      V/12hl)); the recomputation runs the core's forward once.
    - `numerics.alternate_matmuls` (FlashAttention): the block's matmuls in forward order are Q,
      K, V, output projection, FFN gate, up, down; the even-numbered ones are recomputed.
      selective_flops = 2 S H Hkv + 2 S H^2 (the K and output projections' forward; the
      recomputed normalisation and rotary-position elementwise ops, under 1 % of it, are left out),
      selective_stash_bytes = p S (3 H + Hkv): the block input (the checkpoint's), Q, V and the
      FlashAttention output.
    - cut_after False (the block's FFN follows on the same stage); tp_comm_bytes `block_tp_bytes`,
      tp_collectives 2.
    """
    s, d, p = seq_len, hidden, numerics.value_bytes
    kv = d if kv_heads is None else d // heads * kv_heads
    fwd = 4.0 * s * d * (d + kv) + 4.0 * s * s * d + 5.0 * heads * s * s + 10.0 * s * d
    mask = MASK_BYTES * int(numerics.dropout)
    kept = p * s * (4.0 * d + 2.0 * kv) + mask * s * d
    if numerics.flash:
        traffic, stash, standard = 25.0 * s * d + 10.0 * s * kv, kept, {}
        if numerics.alternate_matmuls:
            standard = {
                "selective_stash_bytes": p * s * (3.0 * d + kv),
                "selective_flops": 2.0 * s * d * kv + 2.0 * s * d * d,
            }
    else:
        scores = FWD_BWD * 4.0 * heads * s * s  # the S x S values through HBM, forward and backward
        traffic = FWD_BWD * (10.0 * s * d + 2.0 * s * kv) + scores
        stash = kept + (p + int(numerics.dropout) * (mask + p)) * heads * s * s
        standard = {
            "selective_stash_bytes": kept,
            "selective_flops": 4.0 * s * s * d + 5.0 * heads * s * s,
            "serial_mem_bytes": scores * p,
        }
    return dataclasses.replace(
        make_layer(
            name,
            flops=FWD_BWD * fwd,
            mem_bytes=traffic * p,
            act_bytes=s * d * p,
            dense_param_bytes=(2 * d * d + 2 * d * kv + 2 * d + 2 * kv + 2 * d) * FP32_BYTES,
        ),
        cut_after=False,
        stash_bytes=stash,
        fp8_stash_bytes=stash - (p - FP8_BYTES) * 2.0 * s * d,
        tp_comm_bytes=block_tp_bytes(s, d, numerics),
        tp_collectives=2,
        **standard,
    )


def ffn_block(
    name: str, seq_len: int, hidden: int, ffn: int, gated: bool = False, numerics: Numerics = FP32_STANDARD
) -> Layer:
    """Feed-forward half of a block: LayerNorm, H -> F (GELU) -> H, residual add; `gated`: SwiGLU,
    down(swish(gate(x)) * up(x)), three H x F matrices without biases.

    - forward FLOP = 2 m S H F (m = 2 matmuls, 3 gated) + 8 S F (GELU, or swish and gating) + 10 S H;
      flops = 3x that.
    - dense_param_bytes = (2 H F + F + H + 2 H) * 4; gated (3 H F + 2 H) * 4.
    - mem_bytes = 3 (5 S H + 4 S F) p, gated 3 (5 S H + 6 S F) p (forward traffic, x3);
      act_bytes = S H p.
    - fp8_stash_bytes: stash_bytes less (p − 1)(S H + S F), the first and last projections' inputs
      kept as 1-byte FP8 copies.
    - stash_bytes: GELU 2 p S H (LayerNorm input, first projection input) + 2 p S F (GELU input,
      second projection input) + [dropout] 1 S H; at F = 4 H, p = 2 with dropout 21 S H
      (Korthikanti et al. Sec. 4.1: 19 S H and the LayerNorm's 2 S H). SwiGLU, from its shapes:
      2 p S H (LayerNorm input, the input of the gate and up projections) + 3 p S F (the gate and up
      outputs, and the down projection's input swish(gate) * up) + [dropout] 1 S H: the fused
      SwiGLU of Megatron-Core (megatron/core/fusions/fused_bias_swiglu.py, on by default through
      bias_activation_fusion) saves only its input and recomputes swish(gate) in the backward.
    - `numerics.alternate_matmuls` (SwiGLU): the up projection is the block's sixth matmul and is
      recomputed: selective_flops = 2 S H F, selective_stash_bytes = p S (F + H) (the gate output
      and the down projection's output, which the policy keeps though no backward op reads it).
    - cut_after True; tp_comm_bytes `block_tp_bytes`, tp_collectives 2.
    """
    s, d, f, p = seq_len, hidden, ffn, numerics.value_bytes
    alternate = {}
    if numerics.alternate_matmuls and gated:
        alternate = {"selective_stash_bytes": p * s * (f + d), "selective_flops": 2.0 * s * d * f}
    matrices, inner = (3, 6.0) if gated else (2, 4.0)
    params = 3 * d * f + 2 * d if gated else 2 * d * f + f + d + 2 * d
    kept_f = 3.0 if gated else 2.0
    return dataclasses.replace(
        make_layer(
            name,
            flops=FWD_BWD * (2.0 * matrices * s * d * f + 8.0 * s * f + 10.0 * s * d),
            mem_bytes=FWD_BWD * (5.0 * s * d + inner * s * f) * p,
            act_bytes=s * d * p,
            dense_param_bytes=params * FP32_BYTES,
        ),
        stash_bytes=p * (2.0 * s * d + kept_f * s * f) + MASK_BYTES * int(numerics.dropout) * s * d,
        fp8_stash_bytes=(p * (2.0 * s * d + kept_f * s * f) + MASK_BYTES * int(numerics.dropout) * s * d)
        - (p - FP8_BYTES) * (s * d + s * f),
        tp_comm_bytes=block_tp_bytes(s, d, numerics),
        tp_collectives=2,
        **alternate,
    )


def transformer_layer(
    name: str,
    seq_len: int,
    hidden: int,
    heads: int,
    ffn: int,
    kv_heads: int | None = None,
    gated: bool = False,
    numerics: Numerics = FP32_STANDARD,
) -> tuple[Layer, Layer]:
    """One transformer block as two table rows, `{name}.attention` (cut_after False: one pipeline
    unit with what follows) and `{name}.ffn`."""
    return (
        attention_block(f"{name}.attention", seq_len, hidden, heads, kv_heads, numerics),
        ffn_block(f"{name}.ffn", seq_len, hidden, ffn, gated, numerics),
    )


def lm_head(name: str, seq_len: int, hidden: int, vocab: int, tied: bool, numerics: Numerics = FP32_STANDARD) -> Layer:
    """Language-model head over all S positions: final LayerNorm, output projection H -> V (no
    bias, vocabulary-parallel) and softmax cross-entropy against the next token (its id read by the
    embedding).

    - forward FLOP = 10 S H (LayerNorm) + 2 S H V (projection) + 5 S V (softmax, loss); x3.
    - dense_param_bytes = (2 H + H V) * 4; tied to the word embedding: 2 H * 4 (the matrix is
      counted in the embedding).
    - mem_bytes = 3 (3 S H + 2 S V) p (LayerNorm read/write, projection input; logits written and
      read by the loss; x3); act_bytes = 4 (the fp32 loss).
    - stash_bytes = 2 p S H (LayerNorm input, projection input) + 4 S V (the logits, fp32, for the
      cross-entropy's backward): Korthikanti et al. Sec. 4.3, 4 S H + 4 S V at p = 2.
    - tp_comm_bytes = p S H + 3·4 S, tp_collectives 4: the column-parallel projection All-Reduces
      its input gradient in the backward pass (the f operator), and the vocabulary-parallel
      cross-entropy All-Reduces three fp32 values per token in the forward pass (`LOSS_STATISTICS`).
    """
    s, d, v, p = seq_len, hidden, vocab, numerics.value_bytes
    return dataclasses.replace(
        make_layer(
            name,
            flops=FWD_BWD * (10.0 * s * d + 2.0 * s * d * v + 5.0 * s * v),
            mem_bytes=FWD_BWD * (3.0 * s * d + 2.0 * s * v) * p,
            act_bytes=FP32_BYTES,
            dense_param_bytes=(2 * d + (0 if tied else d * v)) * FP32_BYTES,
        ),
        stash_bytes=2.0 * p * s * d + LOGIT_BYTES * s * v,
        tp_comm_bytes=p * s * d + LOSS_STATISTICS * FP32_BYTES * s,
        tp_collectives=1 + LOSS_STATISTICS,
    )


def pretraining_heads(name: str, hidden: int, vocab: int, masked: int) -> Layer:
    """BERT pre-training heads: pooler (H -> H, tanh) + next-sentence classifier on [CLS], and the
    masked-LM head on `masked` positions (H -> H transform, GELU, LayerNorm, decoder tied to the word
    embedding, vocab softmax). fp32 activations; the parallel-plan fields keep their defaults.

    - forward FLOP = 2 H^2 + 4 H (pooler, NSP) + masked * (2 H^2 + 15 H + 2 H V + 5 V); x3.
    - dense_param_bytes = (H^2 + H + 2 H + 2 + H^2 + 3 H + V) * 4 (the decoder matrix is the tied
      word embedding, counted in the embedding; only its output bias is here).
    - mem_bytes = 3 * masked * (3 H + 3 V) * 4; act_bytes = 4 (the loss).
    """
    d, v = hidden, vocab
    fwd = 2.0 * d * d + 4.0 * d + masked * (2.0 * d * d + 15.0 * d + 2.0 * d * v + 5.0 * v)
    return make_layer(
        name,
        flops=FWD_BWD * fwd,
        mem_bytes=FWD_BWD * masked * (3.0 * d + 3.0 * v) * FP32_BYTES,
        act_bytes=FP32_BYTES,
        dense_param_bytes=(2 * d * d + 6 * d + 2 + v) * FP32_BYTES,
    )


def classification_head(name: str, hidden: int, classes: int) -> Layer:
    """Sequence classification head on the first ([CLS]) position: pooler H -> H (tanh) then a
    classifier H -> classes; the sum of the two `dense` parts (one row each)."""
    return merge_layers(name, [dense(f"{name}.pooler", hidden, hidden), dense(f"{name}.classifier", hidden, classes)])
