"""Pure builders of `Layer`s from architecture hyperparameters: the generic, vision and transformer
ones (sparse embedding layers in `hps.workloads.sparse_layers`, recurrent ones in
`hps.workloads.recurrent_layers`).

Every number a builder returns is **per sample** (docs/placement-model.md, "Inputs and units"):

- ``flops``: FLOP, forward + backward. A multiply-add is 2 FLOP; backward costs about twice the
  forward (gradients w.r.t. inputs and w.r.t. weights), so dense compute is 3x the forward FLOP.
- ``mem_bytes``: bytes of memory traffic per sample, forward + backward. Weights are read once per
  iteration, not per sample, so they are not counted; what is counted are the activations (or, for
  sparse layers, the embedding rows) a sample touches.
- ``io_bytes``: bytes of raw input data the layer reads per sample (feature ids are int64, 8 bytes;
  labels 4 bytes; dense features fp32).
- ``act_bytes``: bytes of the output activation per sample (its gradient comes back the same size).
- ``dense_param_bytes`` / ``sparse_param_bytes``: bytes of parameters (fp32, 4 bytes each); dense ones
  are all-reduced among replicas, sparse ones (embedding tables) are sharded.

Activation functions (ReLU, GELU, sigmoid) are folded into the layer they follow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from hps.config.types import LAYER_NUMBERS, Layer

FP32_BYTES = 4.0
"""Bytes of one fp32 parameter, activation or gradient element."""
ID_BYTES = 8.0
"""Bytes of one raw feature id (int64) in the input data."""
LABEL_BYTES = 4.0
"""Bytes of one sample's label in the input data."""
FWD_BWD = 3.0
"""Forward + backward compute, or activation traffic, as a multiple of the forward pass."""


def make_layer(name: str, kind: str = "dense", **numbers: float) -> Layer:
    """A `Layer` of `kind` with the given per-sample numbers (LAYER_NUMBERS; missing ones are 0)."""
    return Layer(name=name, kind=kind, **{k: float(numbers.get(k, 0.0)) for k in LAYER_NUMBERS})


def dense(name: str, d_in: int, d_out: int, rows: int = 1) -> Layer:
    """A fully connected layer d_in -> d_out (with bias), applied to `rows` vectors per sample.

    - flops = 3 * 2 * d_in * d_out * rows (forward matmul, x3 for forward + backward).
    - dense_param_bytes = (d_in * d_out + d_out) * 4.
    - mem_bytes = 3 * (d_in + d_out) * rows * 4: input read and output written in forward; output
      gradient and input read, input gradient written in backward.
    - act_bytes = d_out * rows * 4.
    """
    return make_layer(
        name,
        flops=FWD_BWD * 2.0 * d_in * d_out * rows,
        mem_bytes=FWD_BWD * (d_in + d_out) * rows * FP32_BYTES,
        act_bytes=d_out * rows * FP32_BYTES,
        dense_param_bytes=(d_in * d_out + d_out) * FP32_BYTES,
    )


def mlp(prefix: str, d_in: int, widths: Iterable[int], out: int | None = None) -> tuple[Layer, ...]:
    """Consecutive `dense` layers d_in -> widths[0] -> widths[1] ..., named prefix1, prefix2, ...;
    with `out`, a last one widths[-1] -> out named prefix_out (the logits)."""
    layers, width = [], d_in
    for i, d_out in enumerate(widths, start=1):
        layers.append(dense(f"{prefix}{i}", width, d_out))
        width = d_out
    if out is not None:
        layers.append(dense(f"{prefix}_out", width, out))
    return tuple(layers)


def concat(name: str, elements: int) -> Layer:
    """Concatenation of inputs totalling `elements` fp32 values per sample (no compute).

    mem_bytes = 4 * elements * 4 (forward read + write, backward read + write of the split gradient);
    act_bytes = elements * 4.
    """
    return make_layer(name, mem_bytes=4.0 * elements * FP32_BYTES, act_bytes=elements * FP32_BYTES)


def elementwise(name: str, elements: int, flops_per_element: float = 1.0, inputs: int = 1) -> Layer:
    """A parameter-free elementwise op (scale, residual add, activation) over `elements` outputs.

    flops = 3 * flops_per_element * elements; mem_bytes = 3 * (inputs + 1) * elements * 4;
    act_bytes = elements * 4.
    """
    return make_layer(
        name,
        flops=FWD_BWD * flops_per_element * elements,
        mem_bytes=FWD_BWD * (inputs + 1) * elements * FP32_BYTES,
        act_bytes=elements * FP32_BYTES,
    )


def loss(name: str, logits: int) -> Layer:
    """Softmax / sigmoid cross-entropy over `logits` values per sample (label read by the first
    layer): ~5 FLOP per logit forward, x3; mem_bytes = 3 * 2 * logits * 4; act = one fp32 loss."""
    return make_layer(
        name,
        flops=FWD_BWD * 5.0 * logits,
        mem_bytes=FWD_BWD * 2.0 * logits * FP32_BYTES,
        act_bytes=FP32_BYTES,
    )


def with_carry(layer: Layer, elements: float) -> Layer:
    """`layer` also passing `elements` fp32 values per sample through to the next layer unchanged
    (e.g. embeddings that skip the bottom MLP); adds elements * 4 to act_bytes."""
    return dataclasses.replace(layer, act_bytes=layer.act_bytes + elements * FP32_BYTES)


def merge_layers(name: str, parts: Iterable[Layer]) -> Layer:
    """One layer made of `parts` run in sequence: sums of flops, bytes and parameters; act_bytes of
    the last part; kind sparse if any part is sparse."""
    parts = tuple(parts)
    total = {k: sum(getattr(p, k) for p in parts) for k in LAYER_NUMBERS if k != "act_bytes"}
    kind = "sparse" if any(p.kind == "sparse" for p in parts) else "dense"
    return make_layer(name, kind, act_bytes=parts[-1].act_bytes, **total)


# --- vision ------------------------------------------------------------------------------------


def conv_out(size: int, kernel: int, stride: int) -> int:
    """Output height/width of a convolution or pool with 'same'-style padding kernel // 2."""
    return (size + 2 * (kernel // 2) - kernel) // stride + 1


def conv2d(
    name: str, h: int, w: int, c_in: int, c_out: int, kernel: int, stride: int = 1, bn_relu: bool = True
) -> Layer:
    """A kernel x kernel convolution (no bias) on an h x w x c_in input, optionally followed by
    batch norm and ReLU.

    - forward multiply-adds = kernel^2 * c_in * c_out * h_out * w_out; flops = 3 * 2 * MACs, plus
      3 * 5 FLOP per output element for BN + ReLU.
    - dense_param_bytes = (kernel^2 * c_in * c_out + 2 * c_out [BN gamma, beta]) * 4.
    - mem_bytes = 3 * (input + output elements) * 4, plus 3 * 2 * output * 4 for BN + ReLU.
    - act_bytes = h_out * w_out * c_out * 4.
    """
    out = conv_out(h, kernel, stride) * conv_out(w, kernel, stride) * c_out
    macs = kernel * kernel * c_in * out
    bn = 1.0 if bn_relu else 0.0
    return make_layer(
        name,
        flops=FWD_BWD * (2.0 * macs + bn * 5.0 * out),
        mem_bytes=FWD_BWD * (h * w * c_in + out + bn * 2.0 * out) * FP32_BYTES,
        act_bytes=out * FP32_BYTES,
        dense_param_bytes=(kernel * kernel * c_in * c_out + bn * 2 * c_out) * FP32_BYTES,
    )


def pool2d(name: str, h: int, w: int, c: int, kernel: int, stride: int) -> Layer:
    """Max / average pooling of an h x w x c input: kernel^2 FLOP per output forward, x3;
    mem_bytes = 3 * (input + output) * 4; act_bytes = output * 4."""
    out = conv_out(h, kernel, stride) * conv_out(w, kernel, stride) * c
    return make_layer(
        name,
        flops=FWD_BWD * kernel * kernel * out,
        mem_bytes=FWD_BWD * (h * w * c + out) * FP32_BYTES,
        act_bytes=out * FP32_BYTES,
    )


def bottleneck(name: str, h: int, w: int, c_in: int, mid: int, stride: int = 1, expansion: int = 4) -> Layer:
    """A ResNet v1.5 bottleneck block: 1x1 (c_in -> mid), 3x3 stride `stride` (mid -> mid), 1x1
    (mid -> expansion * mid), each with BN; a 1x1 strided projection + BN on the shortcut when the
    shape changes; residual add + ReLU. Numbers are the sums of the parts (see `conv2d`)."""
    c_out = expansion * mid
    h2, w2 = conv_out(h, 3, stride), conv_out(w, 3, stride)
    parts = [
        conv2d(f"{name}.conv1", h, w, c_in, mid, 1),
        conv2d(f"{name}.conv2", h, w, mid, mid, 3, stride),
        conv2d(f"{name}.conv3", h2, w2, mid, c_out, 1),
    ]
    if stride != 1 or c_in != c_out:
        parts.append(conv2d(f"{name}.downsample", h, w, c_in, c_out, 1, stride))
    parts.append(elementwise(f"{name}.add_relu", h2 * w2 * c_out, flops_per_element=2.0, inputs=2))
    return merge_layers(name, parts)


# --- transformer -------------------------------------------------------------------------------


def token_embedding(
    name: str,
    seq_len: int,
    hidden: int,
    tables: Sequence[int],
    ids_per_token: int = 3,
    layer_norm: bool = True,
    label_bytes: float = LABEL_BYTES,
) -> Layer:
    """Input embeddings of `seq_len` tokens: one row of each table in `tables` (their row counts,
    e.g. BERT's word, position and token type (type_vocab 2) tables; GPT's word and position tables;
    Llama's word table) summed, then LayerNorm if `layer_norm`.

    A dense layer: all replicas keep the tables whole (all-reduced). With n = len(tables):
    - dense_param_bytes = (sum(tables) * hidden + 2 * hidden [LayerNorm]) * 4.
    - flops = 3 * ((n - 1) + 10 [LayerNorm]) * seq_len * hidden (the adds, ~10 per element for LayerNorm).
    - mem_bytes = 3 * (n + 1 + 2 [LayerNorm]) * seq_len * hidden * 4 (rows read, sum written,
      LayerNorm read/write).
    - io_bytes = ids_per_token * seq_len * 8 (BERT: token ids, segment ids, attention mask) + label_bytes.
    - act_bytes = seq_len * hidden * 4.
    """
    elems, norm = seq_len * hidden, int(layer_norm)
    return make_layer(
        name,
        flops=FWD_BWD * (len(tables) - 1 + 10 * norm) * elems,
        mem_bytes=FWD_BWD * (len(tables) + 1 + 2 * norm) * elems * FP32_BYTES,
        io_bytes=ids_per_token * seq_len * ID_BYTES + label_bytes,
        act_bytes=elems * FP32_BYTES,
        dense_param_bytes=(sum(tables) * hidden + 2 * hidden * norm) * FP32_BYTES,
    )


def attention_block(name: str, seq_len: int, hidden: int, heads: int, kv_heads: int | None = None) -> Layer:
    """Self-attention sub-layer (Q, K, V projections, scores over seq_len, softmax, context, output
    projection, residual add, LayerNorm), S = seq_len, H = hidden, h = heads; grouped-query
    attention with `kv_heads` K/V heads of width H / h each (default h: multi-head attention), so K
    and V have width Hkv = kv_heads * H / h.

    - forward FLOP = 4 S H (H + Hkv) (projections) + 4 S^2 H (scores, context) + 5 h S^2 (softmax)
      + 10 S H (residual, LayerNorm); flops = 3x that. Multi-head: 8 S H^2 for the projections.
    - dense_param_bytes = (2 H^2 + 2 H Hkv + 2 H + 2 Hkv + 2 H) * 4 (weights, biases, LayerNorm);
      multi-head: (4 H^2 + 4 H + 2 H) * 4.
    - mem_bytes = 3 * (10 S H + 2 S Hkv + 4 h S^2) * 4 (activations touched in forward, x3).
    - act_bytes = S H * 4.
    """
    s, d = seq_len, hidden
    kv = d if kv_heads is None else d // heads * kv_heads
    fwd = 4.0 * s * d * (d + kv) + 4.0 * s * s * d + 5.0 * heads * s * s + 10.0 * s * d
    return make_layer(
        name,
        flops=FWD_BWD * fwd,
        mem_bytes=FWD_BWD * (10.0 * s * d + 2.0 * s * kv + 4.0 * heads * s * s) * FP32_BYTES,
        act_bytes=s * d * FP32_BYTES,
        dense_param_bytes=(2 * d * d + 2 * d * kv + 2 * d + 2 * kv + 2 * d) * FP32_BYTES,
    )


def ffn_block(name: str, seq_len: int, hidden: int, ffn: int, gated: bool = False) -> Layer:
    """Transformer feed-forward sub-layer H -> F (GELU) -> H, residual add, LayerNorm; `gated`:
    SwiGLU, down(swish(gate(x)) * up(x)), three H x F matrices without biases.

    - forward FLOP = 2 m S H F (m = 2 matmuls, 3 gated) + 8 S F (GELU, or swish and gating) + 10 S H;
      flops = 3x that.
    - dense_param_bytes = (2 H F + F + H + 2 H) * 4; gated (3 H F + 2 H) * 4.
    - mem_bytes = 3 * (5 S H + 4 S F) * 4, gated 3 * (5 S H + 6 S F) * 4; act_bytes = S H * 4.
    """
    s, d, f = seq_len, hidden, ffn
    matrices, inner = (3, 6.0) if gated else (2, 4.0)
    params = 3 * d * f + 2 * d if gated else 2 * d * f + f + d + 2 * d
    return make_layer(
        name,
        flops=FWD_BWD * (2.0 * matrices * s * d * f + 8.0 * s * f + 10.0 * s * d),
        mem_bytes=FWD_BWD * (5.0 * s * d + inner * s * f) * FP32_BYTES,
        act_bytes=s * d * FP32_BYTES,
        dense_param_bytes=params * FP32_BYTES,
    )


def transformer_layer(
    name: str, seq_len: int, hidden: int, heads: int, ffn: int, kv_heads: int | None = None, gated: bool = False
) -> tuple[Layer, Layer]:
    """One transformer layer as two table rows: `{name}.attention` and `{name}.ffn`."""
    return (
        attention_block(f"{name}.attention", seq_len, hidden, heads, kv_heads),
        ffn_block(f"{name}.ffn", seq_len, hidden, ffn, gated),
    )


def lm_head(name: str, seq_len: int, hidden: int, vocab: int, tied: bool) -> Layer:
    """Language-model head over all `seq_len` positions: final LayerNorm, output projection H -> V
    (no bias) and softmax cross-entropy against the next token (its id read by the embedding).

    - forward FLOP = 10 S H (LayerNorm) + 2 S H V (projection) + 5 S V (softmax, loss); x3.
    - dense_param_bytes = (2 H + H V) * 4; tied to the word embedding: 2 H * 4 (the matrix is
      counted in `token_embedding`).
    - mem_bytes = 3 * (3 S H + 2 S V) * 4 (LayerNorm read/write, projection input; logits written
      and read by the loss); act_bytes = 4 (the loss).
    """
    s, d, v = seq_len, hidden, vocab
    return make_layer(
        name,
        flops=FWD_BWD * (10.0 * s * d + 2.0 * s * d * v + 5.0 * s * v),
        mem_bytes=FWD_BWD * (3.0 * s * d + 2.0 * s * v) * FP32_BYTES,
        act_bytes=FP32_BYTES,
        dense_param_bytes=(2 * d + (0 if tied else d * v)) * FP32_BYTES,
    )


def pretraining_heads(name: str, hidden: int, vocab: int, masked: int) -> Layer:
    """BERT pre-training heads: pooler (H -> H, tanh) + next-sentence classifier on [CLS], and the
    masked-LM head on `masked` positions (H -> H transform, GELU, LayerNorm, decoder tied to the word
    embedding, vocab softmax).

    - forward FLOP = 2 H^2 + 4 H (pooler, NSP) + masked * (2 H^2 + 15 H + 2 H V + 5 V); x3.
    - dense_param_bytes = (H^2 + H + 2 H + 2 + H^2 + 3 H + V) * 4 (the decoder matrix is the tied
      word embedding, counted in `token_embedding`; only its output bias is here).
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
