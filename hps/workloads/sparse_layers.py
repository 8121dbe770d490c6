"""Builders of the sparse (embedding-table) and interaction layers of the recommendation zoo.

Per-sample numbers and units as in `hps.workloads.layers`: sparse layers hold embedding tables
(sparse_param_bytes, sharded across a stage's replicas) and read the raw feature ids.
"""

from __future__ import annotations

from hps.config.types import Layer
from hps.workloads.layers import FP32_BYTES, FWD_BWD, ID_BYTES, LABEL_BYTES, make_layer


def embedding(
    name: str,
    slots: int,
    ids_per_slot: float,
    rows: float,
    dim: int,
    pooled: bool = True,
    label_bytes: float = LABEL_BYTES,
    dense_features: int = 0,
) -> Layer:
    """A sparse embedding lookup over `slots` feature slots, `ids_per_slot` ids each.

    - sparse_param_bytes = rows * dim * 4 (one fp32 table of `rows` x `dim`).
    - lookups = slots * ids_per_slot rows touched per sample.
    - flops = 3 * lookups * dim when pooled (forward sum-pooling adds, backward gradient scatter into
      each touched row, optimizer update of each row); 2 * lookups * dim unpooled (no pooling adds).
    - mem_bytes = 3 * lookups * dim * 4: each touched row is read in forward, and read + written
      (read-modify-write of the sparse update) in backward.
    - io_bytes = lookups * 8 (raw int64 ids) + label_bytes + dense_features * 4 (fp32 dense
      features, read here and passed through).
    - act_bytes = slots * dim * 4 pooled (one vector per slot), lookups * dim * 4 unpooled, plus the
      dense features passed through.
    """
    lookups = slots * ids_per_slot
    touched = lookups * dim
    out_elems = slots * dim if pooled else lookups * dim
    return make_layer(
        name,
        "sparse",
        flops=(3.0 if pooled else 2.0) * touched,
        mem_bytes=FWD_BWD * touched * FP32_BYTES,
        io_bytes=lookups * ID_BYTES + label_bytes + dense_features * FP32_BYTES,
        act_bytes=(out_elems + dense_features) * FP32_BYTES,
        sparse_param_bytes=rows * dim * FP32_BYTES,
    )


def dot_interaction(name: str, vectors: int, dim: int) -> Layer:
    """DLRM dot interaction: pairwise dot products of `vectors` vectors of `dim` (the bottom-MLP output
    and one pooled embedding per table), concatenated with the bottom-MLP output.

    Forward is a batched (vectors x dim) @ (dim x vectors) product: 2 * vectors^2 * dim FLOP; x3.
    Output = vectors * (vectors - 1) / 2 + dim values; act_bytes = output * 4;
    mem_bytes = 3 * (vectors * dim + output) * 4.
    """
    out = vectors * (vectors - 1) // 2 + dim
    return make_layer(
        name,
        flops=FWD_BWD * 2.0 * vectors * vectors * dim,
        mem_bytes=FWD_BWD * (vectors * dim + out) * FP32_BYTES,
        act_bytes=out * FP32_BYTES,
    )


def fm_interaction(name: str, fields: int, dim: int) -> Layer:
    """Factorisation-machine second-order term 0.5 * ((sum_f v_f)^2 - sum_f v_f^2) over `fields`
    embeddings of `dim`, reduced to one scalar.

    Forward: fields*dim adds (sum), 2*fields*dim (sum of squares), ~3*dim (square, subtract,
    reduce): (3 * fields + 3) * dim FLOP; x3. mem_bytes = 3 * (fields * dim + 1) * 4; act = 4 bytes.
    """
    return make_layer(
        name,
        flops=FWD_BWD * (3.0 * fields + 3.0) * dim,
        mem_bytes=FWD_BWD * (fields * dim + 1) * FP32_BYTES,
        act_bytes=FP32_BYTES,
    )


def cosine(name: str, dim: int) -> Layer:
    """Cosine similarity of two `dim` vectors (two-tower matching score): ~6 * dim FLOP forward
    (dot, two norms); x3. mem_bytes = 3 * (2 * dim + 1) * 4; act = one fp32 score."""
    return make_layer(
        name,
        flops=FWD_BWD * 6.0 * dim,
        mem_bytes=FWD_BWD * (2 * dim + 1) * FP32_BYTES,
        act_bytes=FP32_BYTES,
    )


def nce_output(name: str, positions: int, negatives: int, rows: float, dim: int) -> Layer:
    """Sparse output table of NCE / negative sampling (word2vec): for each of `positions` targets,
    gather the true row and `negatives` rows sampled in-layer from the unigram table.

    - sparse_param_bytes = rows * (dim + 1) * 4 (output vectors and biases).
    - lookups = positions * (1 + negatives); flops = 2 * lookups * (dim + 1) (backward scatter and
      optimizer update; the forward gather has no arithmetic).
    - mem_bytes = 3 * lookups * (dim + 1) * 4 (read forward, read-modify-write backward).
    - io_bytes = positions * 8 (target ids; negatives are sampled, not read).
    - act_bytes = lookups * (dim + 1) * 4 (the gathered rows, passed to `nce_score`).
    """
    lookups = positions * (1 + negatives)
    touched = lookups * (dim + 1)
    return make_layer(
        name,
        "sparse",
        flops=2.0 * touched,
        mem_bytes=FWD_BWD * touched * FP32_BYTES,
        io_bytes=positions * ID_BYTES,
        act_bytes=touched * FP32_BYTES,
        sparse_param_bytes=rows * (dim + 1) * FP32_BYTES,
    )


def nce_score(name: str, positions: int, negatives: int, dim: int) -> Layer:
    """NCE scoring: for each position, dot the context vector with its 1 + `negatives` output rows,
    add the bias and take the binary logistic loss.

    Forward: positions * (1 + negatives) * (2 * dim + 6) FLOP; x3. mem_bytes = 3 * (positions * dim +
    positions * (1 + negatives) * (dim + 2)) * 4; act = one fp32 loss.
    """
    logits = positions * (1 + negatives)
    return make_layer(
        name,
        flops=FWD_BWD * logits * (2.0 * dim + 6.0),
        mem_bytes=FWD_BWD * (positions * dim + logits * (dim + 2)) * FP32_BYTES,
        act_bytes=FP32_BYTES,
    )
