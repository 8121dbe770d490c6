"""Random layer tables (pure, keyed jnp), numbers built the way `hps.workloads.layers` builds them.

A workload has `n_layers` real layers padded to max_layers: 1–3 sparse embedding layers at the
front (tables of 16–512 GiB, a few KiB of raw ids per sample), then dense layers of one family drawn per
workload — an MLP (`dense`), a transformer (`attention_block` / `ffn_block`) or a CNN (`conv2d`) —
ending in a small classifier head. Hyperparameters are sampled per position and every formula is
applied to all max_layers positions at once; masks pick the family and the layer kind, so there
is no Python loop over instances and the function vmaps. All numbers are per sample: FLOP (forward +
backward) and bytes (see `hps.workloads.layers` for the formulas' derivation).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.config.types import LAYER_NUMBERS
from hps.config.validation import GIB
from hps.placement.env.catalog_gen import log_uniform
from hps.workloads.layers import FP32_BYTES, FWD_BWD, ID_BYTES, LABEL_BYTES

MAX_SPARSE = 3
MAX_LOOKUPS = 1024.0  # ids per sample over all slots of one embedding layer: ≤ 8 KiB of raw ids
FAMILIES = ("mlp", "transformer", "cnn")
FAMILY_PROBS = (0.5, 0.25, 0.25)


def _choice(key, values, shape):
    """Uniform choice from a tuple of floats, float32 array of `shape`."""
    return jnp.asarray(values, jnp.float32)[jax.random.randint(key, shape, 0, len(values))]


def embedding_layers(key, positions, n_sparse):
    """Sparse layers at positions < n_sparse (others zero): dict of (L,) numbers, plus the width
    (fp32 elements per sample) they hand to the first dense layer.

    Like `layers.embedding` (pooled): lookups = slots · ids_per_slot (≤ 1024), flops = 3·lookups·dim,
    mem = 3·lookups·dim·4, io = lookups·8 (+ label and dense features on the first layer),
    act = every pooled slot vector so far plus the dense features (carried through)."""
    n = positions.shape[0]
    ks = jax.random.split(key, 6)
    slots = jnp.round(log_uniform(ks[0], (n,), 4.0, 40.0))
    lookups = jnp.minimum(slots * log_uniform(ks[1], (n,), 1.0, 32.0), MAX_LOOKUPS)
    dim = _choice(ks[2], (16.0, 32.0, 64.0, 128.0), (n,))
    table = log_uniform(ks[3], (n,), 16.0, 512.0) * GIB
    dense_features = jnp.round(jax.random.uniform(ks[4], (), minval=0.0, maxval=32.0))
    sparse = positions < n_sparse
    touched = lookups * dim
    pooled = jnp.where(sparse, slots * dim, 0.0)
    first_extra = jnp.where(positions == 0, LABEL_BYTES + dense_features * FP32_BYTES, 0.0)
    numbers = dict(
        flops=3.0 * touched,
        mem_bytes=FWD_BWD * touched * FP32_BYTES,
        io_bytes=lookups * ID_BYTES + first_extra,
        act_bytes=(jnp.cumsum(pooled) + dense_features) * FP32_BYTES,
        dense_param_bytes=jnp.zeros((n,)),
        sparse_param_bytes=table,
    )
    numbers = {k: jnp.where(sparse, v, 0.0) for k, v in numbers.items()}
    return numbers, jnp.sum(pooled) + dense_features


def fc_numbers(d_in, d_out, rows=1.0):
    """`layers.dense`: flops 6·d_in·d_out·rows, mem 3(d_in+d_out)·rows·4, act d_out·rows·4,
    params (d_in·d_out + d_out)·4."""
    return dict(
        flops=FWD_BWD * 2.0 * d_in * d_out * rows,
        mem_bytes=FWD_BWD * (d_in + d_out) * rows * FP32_BYTES,
        act_bytes=d_out * rows * FP32_BYTES,
        dense_param_bytes=(d_in * d_out + d_out) * FP32_BYTES,
    )


def mlp_family(key, j, last, d_emb, classes):
    """Dense chain: widths 2^5..2^11 per layer, first input d_emb, last output `classes`."""
    width = 2.0 ** jax.random.randint(key, j.shape, 5, 12).astype(jnp.float32)
    d_in = jnp.where(j == 0, d_emb, jnp.roll(width, 1))
    return fc_numbers(d_in, jnp.where(last, classes, width))


def transformer_family(key, j, last, d_emb, classes):
    """Input projection (d_emb → H on S rows), then alternating `attention_block` / `ffn_block`
    (S ∈ {64..512}, H ∈ {256..1024}, H/64 heads, F = 4H), and a classifier head H → classes."""
    k_s, k_h = jax.random.split(key)
    s = _choice(k_s, (64.0, 128.0, 256.0, 512.0), ())
    h = _choice(k_h, (256.0, 512.0, 768.0, 1024.0), ())
    heads, f = h / 64.0, 4.0 * h
    attention = dict(
        flops=FWD_BWD * (8 * s * h * h + 4 * s * s * h + 5 * heads * s * s + 10 * s * h),
        mem_bytes=FWD_BWD * (12 * s * h + 4 * heads * s * s) * FP32_BYTES,
        act_bytes=s * h * FP32_BYTES,
        dense_param_bytes=(4 * h * h + 6 * h) * FP32_BYTES,
    )
    ffn = dict(
        flops=FWD_BWD * (4 * s * h * f + 8 * s * f + 10 * s * h),
        mem_bytes=FWD_BWD * (5 * s * h + 4 * s * f) * FP32_BYTES,
        act_bytes=s * h * FP32_BYTES,
        dense_param_bytes=(2 * h * f + f + 3 * h) * FP32_BYTES,
    )
    projection, head = fc_numbers(d_emb, h, s), fc_numbers(h, classes)
    pick = lambda name: jnp.where(  # noqa: E731
        last, head[name], jnp.where(j == 0, projection[name], jnp.where(j % 2 == 1, attention[name], ffn[name]))
    )
    return {name: pick(name) for name in head}


def cnn_family(key, j, last, classes):
    """`conv2d` chain (+BN/ReLU): input 28–112 px, 16 channels; each later layer halves the image
    and doubles the channels with probability 0.3 (≥ 7 px, ≤ 2048 channels); kernels 1 or 3;
    then global average pool + fc head C → classes."""
    k_h, k_c, k_s, k_k = jax.random.split(key, 4)
    h0 = _choice(k_h, (28.0, 56.0, 112.0), ())
    c0 = _choice(k_c, (32.0, 64.0), ())
    stride = jnp.where((j >= 1) & jax.random.bernoulli(k_s, 0.3, j.shape), 2.0, 1.0)
    level = jnp.cumsum(jnp.where(j >= 0, jnp.log2(stride), 0.0))
    h_out = jnp.maximum(h0 / 2.0**level, 7.0)
    c_out = jnp.minimum(c0 * 2.0**level, 2048.0)
    h_in = jnp.where(j <= 0, h0, jnp.roll(h_out, 1))
    c_in = jnp.where(j <= 0, 16.0, jnp.roll(c_out, 1))
    kernel = _choice(k_k, (1.0, 3.0), j.shape)
    out = h_out * h_out * c_out
    conv = dict(
        flops=FWD_BWD * (2.0 * kernel * kernel * c_in * out + 5.0 * out),
        mem_bytes=FWD_BWD * (h_in * h_in * c_in + 3.0 * out) * FP32_BYTES,
        act_bytes=out * FP32_BYTES,
        dense_param_bytes=(kernel * kernel * c_in * c_out + 2.0 * c_out) * FP32_BYTES,
    )
    head = fc_numbers(c_in, classes)
    head["flops"] = head["flops"] + FWD_BWD * h_in * h_in * c_in  # the average pool
    return {name: jnp.where(last, head[name], conv[name]) for name in conv}


def random_workload(key, n_layers, max_layers: int) -> dict[str, jnp.ndarray]:
    """PlacementParams layer fields (L,) for `n_layers` (traced, ≥ 3) real layers padded to
    `max_layers`; measured_time / measured_mask are added by the caller."""
    k_sparse, k_emb, k_family, k_layers, k_classes = jax.random.split(key, 5)
    positions = jnp.arange(max_layers)
    n_sparse = jnp.minimum(jax.random.randint(k_sparse, (), 1, MAX_SPARSE + 1), n_layers - 2)
    sparse_numbers, d_emb = embedding_layers(k_emb, positions, n_sparse)
    j = positions - n_sparse
    last = positions == n_layers - 1
    classes = _choice(k_classes, (1.0, 2.0), ())
    family = jax.random.choice(k_family, len(FAMILIES), p=jnp.asarray(FAMILY_PROBS))
    k_mlp, k_tf, k_cnn = jax.random.split(k_layers, 3)
    options = (
        mlp_family(k_mlp, j, last, d_emb, classes),
        transformer_family(k_tf, j, last, d_emb, classes),
        cnn_family(k_cnn, j, last, classes),
    )
    real = positions < n_layers
    sparse = positions < n_sparse
    out = {}
    for name in LAYER_NUMBERS:
        dense_value = jnp.zeros((max_layers,))
        for f, numbers in enumerate(options):
            dense_value = jnp.where(family == f, numbers.get(name, 0.0), dense_value)
        value = jnp.where(sparse, sparse_numbers[name], dense_value)
        out[name] = jnp.where(real, value, 0.0).astype(jnp.float32)
    out["layer_mask"] = real
    out["layer_sparse"] = real & sparse
    return out
