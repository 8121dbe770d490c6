"""Pure builders of `Layer`s from architecture hyperparameters: the generic and vision ones and the
token embedding (transformer blocks and heads in `hps.workloads.transformer_layers`, sparse
embedding layers in `hps.workloads.sparse_layers`, recurrent ones in `hps.workloads.recurrent_layers`).

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
  are all-reduced among replicas, sparse ones (embedding tables) are sharded. Parameters always count
  4 bytes (parameters = dense_param_bytes / 4); a job's precision sets what they weigh in training.

Activation values are fp32 (4 bytes) in these builders; the transformer builders take the bytes per
activation value as an argument (2 for the bf16 LLMs).

Activation functions (ReLU, GELU, sigmoid) are folded into the layer they follow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from hps.config.types import LAYER_NUMBERS, Layer

FP32_BYTES = 4.0
"""Bytes of one fp32 parameter, activation or gradient element."""
BF16_BYTES = 2.0
"""Bytes of one bf16 (or fp16) activation or gradient element."""
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
    value_bytes: float = FP32_BYTES,
) -> Layer:
    """Input embeddings of `seq_len` tokens: one row of each table in `tables` (their row counts,
    e.g. BERT's word, position and token type (type_vocab 2) tables; GPT's word and position tables;
    Llama's word table) summed, then LayerNorm if `layer_norm`.

    A dense layer: all replicas keep the tables whole (all-reduced). With n = len(tables):
    - dense_param_bytes = (sum(tables) * hidden + 2 * hidden [LayerNorm]) * 4.
    - flops = 3 * ((n - 1) + 10 [LayerNorm]) * seq_len * hidden (the adds, ~10 per element for LayerNorm).
    - mem_bytes = 3 * (n + 1 + 2 [LayerNorm]) * seq_len * hidden * p (rows read, sum written,
      LayerNorm read/write), p = `value_bytes` per activation value (4: fp32, 2: bf16).
    - io_bytes = ids_per_token * seq_len * 8 (BERT: token ids, segment ids, attention mask) + label_bytes.
    - act_bytes = seq_len * hidden * p.
    """
    elems, norm = seq_len * hidden, int(layer_norm)
    return make_layer(
        name,
        flops=FWD_BWD * (len(tables) - 1 + 10 * norm) * elems,
        mem_bytes=FWD_BWD * (len(tables) + 1 + 2 * norm) * elems * value_bytes,
        io_bytes=ids_per_token * seq_len * ID_BYTES + label_bytes,
        act_bytes=elems * value_bytes,
        dense_param_bytes=(sum(tables) * hidden + 2 * hidden * norm) * FP32_BYTES,
    )
