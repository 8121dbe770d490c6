"""Sparse recommendation and embedding workloads (the HeterPS setting).

Each factory builds its layer table from hyperparameters: one or a few sparse embedding layers first
(tables of hundreds of GiB, raw feature ids of a few KiB per sample read from input), then dense
layers. A cheapest plan typically puts the embeddings on CPU nodes (memory, io) and the MLP on GPUs.
Values that skip a layer on their way to a later one (e.g. embeddings around the bottom MLP) are
added to that layer's act_bytes with `with_carry`, because a pipeline stage must forward them.
"""

from __future__ import annotations

from collections.abc import Sequence

from hps.config.types import JobDefaults, Layer, Workload
from hps.workloads.layers import (
    FP32_BYTES,
    concat,
    cosine,
    dense,
    dot_interaction,
    elementwise,
    embedding,
    fm_interaction,
    loss,
    mlp,
    nce_output,
    nce_score,
    with_carry,
)


def _widths(hidden: Sequence[int], last: int) -> str:
    return "-".join(str(w) for w in (*hidden, last))


def _num(x: float) -> str:
    """1e9 -> '1e9', 4e7 -> '4e7', 64 -> '64'."""
    return f"{x:.3g}".replace("e+0", "e").replace("e+", "e")


def _table_size(layer: Layer) -> str:
    """'477 GiB' for production tables, '0.3 MiB' for laptop-sized ones."""
    size = layer.sparse_param_bytes
    return f"{size / 2**30:.0f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"


def ctr_dnn(
    slots: int = 26,
    ids_per_slot: float = 10,
    rows: float = 2_000_000_000,
    dim: int = 64,
    dense_features: int = 13,
    hidden: Sequence[int] = (512, 256, 128),
    classes: int = 2,
) -> Workload:
    """HeterPS's CTR-DNN: sparse slots -> embedding (sum-pooled per slot) -> concat with dense
    features -> MLP -> softmax loss.

    Defaults: 26 sparse slots with 10 ids each (2,080 B of raw ids per sample), one shared table of
    2e9 rows x 64 (4 B) = 512 GB (477 GiB), 13 dense features, hidden widths 512-256-128, 2 classes.
    Job: batch 4096, floor 100k samples/s, 5e9 samples.
    """
    d_in = slots * dim + dense_features
    layers = (
        embedding("embedding", slots, ids_per_slot, rows, dim, dense_features=dense_features),
        concat("concat", d_in),
        *mlp("fc", d_in, hidden),
        dense("fc_out", hidden[-1], classes),
        loss("loss", classes),
    )
    return Workload(
        "ctr-dnn",
        layers,
        JobDefaults(batch=4096.0, throughput=100_000.0, samples=5e9),
        f"HeterPS CTR-DNN: {slots} pooled sparse slots ({_table_size(layers[0])} table) + {dense_features} "
        f"dense features -> MLP {_widths(hidden, classes)}",
    )


def wide_deep(
    wide_slots: int = 16,
    wide_ids_per_slot: float = 8,
    wide_rows: float = 10_000_000_000,
    slots: int = 26,
    ids_per_slot: float = 8,
    rows: float = 1_000_000_000,
    dim: int = 64,
    dense_features: int = 13,
    hidden: Sequence[int] = (1024, 512, 256),
) -> Workload:
    """Wide & Deep: a wide sparse linear model over cross-product features (a dim-1 embedding) plus a
    deep part (embeddings + dense features -> MLP); the two logits are summed into a sigmoid loss.

    Defaults: wide part 16 cross slots x 8 ids over 1e10 rows x 1 (40 GB); deep part 26 slots x 8 ids
    over 1e9 rows x 64 (256 GB); 13 dense features; hidden widths 1024-512-256 (as in the paper);
    1,664 B of raw ids per sample. Job: batch 4096, floor 50k samples/s, 2e9 samples.
    """
    wide = embedding("wide", wide_slots, wide_ids_per_slot, wide_rows, 1)
    d_in = slots * dim + dense_features
    deep = (
        embedding("deep_embedding", slots, ids_per_slot, rows, dim, label_bytes=0.0, dense_features=dense_features),
        concat("concat", d_in),
        *mlp("fc", d_in, hidden),
    )
    wide_values = wide_slots  # the wide part's pooled weights ride along to the output
    layers = (
        wide,
        *(with_carry(layer, wide_values) for layer in deep),
        with_carry(dense("fc_out", hidden[-1], 1), wide_values),
        loss("loss", 1),
    )
    return Workload(
        "wide-deep",
        layers,
        JobDefaults(batch=4096.0, throughput=50_000.0, samples=2e9),
        f"Wide & Deep: wide cross features ({_num(wide_rows)} x 1) + deep {slots}-slot embedding "
        f"({_num(rows)} x {dim}) -> MLP {_widths(hidden, 1)}",
    )


def deepfm(
    fields: int = 39,
    ids_per_field: float = 8,
    rows: float = 1_000_000_000,
    dim: int = 64,
    hidden: Sequence[int] = (400, 400, 400),
) -> Workload:
    """DeepFM: one sparse table whose rows hold a field value's embedding and its first-order weight
    (dim + 1 columns), the FM second-order interaction, and a deep MLP on the same embeddings; the
    first-order, FM and deep logits are summed into a sigmoid loss.

    Defaults: 39 fields (Criteo: 13 bucketised numeric + 26 categorical) x 8 ids (2,496 B raw ids per
    sample), 1e9 rows, embedding dim 64 (+1 first-order weight: 260 GB), hidden widths 400-400-400
    (as in the paper). Job: batch 4096, floor 100k samples/s, 4e9 samples.
    """
    d_in = fields * dim
    carried = fields + 1  # first-order weights and the FM term ride along to the output
    layers = (
        embedding("embedding", fields, ids_per_field, rows, dim + 1),
        with_carry(fm_interaction("fm_second_order", fields, dim), d_in + fields),
        *(with_carry(layer, carried) for layer in mlp("fc", d_in, hidden)),
        with_carry(dense("fc_out", hidden[-1], 1), carried),
        loss("loss", 1),
    )
    return Workload(
        "deepfm",
        layers,
        JobDefaults(batch=4096.0, throughput=100_000.0, samples=4e9),
        f"DeepFM: {fields} fields ({_num(rows)} x {dim} shared embedding) -> FM second order + deep MLP "
        f"{_widths(hidden, 1)}",
    )


def dlrm(
    tables: int = 26,
    ids_per_table: float = 8,
    rows_per_table: float = 40_000_000,
    dim: int = 128,
    dense_features: int = 13,
    bottom_hidden: Sequence[int] = (512, 256),
    top: Sequence[int] = (1024, 1024, 512, 256),
) -> Workload:
    """DLRM as in the MLPerf Criteo 1TB config: bottom MLP on dense features, one pooled embedding
    per table, dot interaction, top MLP, sigmoid loss.

    Defaults: 26 tables x 40M rows (the MLPerf row cap, applied to every table) x dim 128 = 532 GB
    (496 GiB); 8 ids per table (multi-hot, about the mean of MLPerf DLRM-DCNv2's multi-hot sizes;
    1,664 B raw ids per sample); 13 dense features; bottom MLP 13-512-256 then a last layer of width
    `dim` (128); top MLP 1024-1024-512-256-1.
    Job: batch 8192, floor 200k samples/s, 4.2e9 samples (one Criteo 1TB epoch).
    """
    bottom = (*bottom_hidden, dim)
    pooled = tables * dim
    interaction = dot_interaction("interaction", tables + 1, dim)
    top_in = int(interaction.act_bytes // FP32_BYTES)
    layers = (
        embedding("embedding", tables, ids_per_table, tables * rows_per_table, dim, dense_features=dense_features),
        *(with_carry(layer, pooled) for layer in mlp("bottom_fc", dense_features, bottom)),
        interaction,
        *mlp("top_fc", top_in, top),
        dense("top_fc_out", top[-1], 1),
        loss("loss", 1),
    )
    return Workload(
        "dlrm",
        layers,
        JobDefaults(batch=8192.0, throughput=200_000.0, samples=4.2e9),
        f"DLRM (MLPerf Criteo 1TB shape): {tables} tables x {_num(rows_per_table)} x {dim}, bottom MLP "
        f"{_widths(bottom_hidden, dim)}, dot interaction, top MLP {_widths(top, 1)}",
    )


def matchnet(
    query_slots: int = 4,
    query_ids_per_slot: float = 32,
    query_rows: float = 1_000_000_000,
    item_slots: int = 4,
    item_ids_per_slot: float = 32,
    item_rows: float = 500_000_000,
    dim: int = 64,
    hidden: Sequence[int] = (512, 256, 128),
) -> Workload:
    """Two-tower matching (MatchNet / DSSM style): query features -> embedding -> query MLP; item
    features -> embedding -> item MLP; cosine similarity -> sigmoid loss.

    Defaults: query 4 slots x 32 ids over 1e9 rows, item 4 slots x 32 ids over 5e8 rows, dim 64
    (256 GB + 128 GB; 2,048 B raw ids per sample); both towers 512-256-128.
    Job: batch 4096, floor 50k samples/s, 1e9 samples.
    """
    q_in, i_in, out = query_slots * dim, item_slots * dim, hidden[-1]
    layers = (
        embedding("query_embedding", query_slots, query_ids_per_slot, query_rows, dim),
        with_carry(embedding("item_embedding", item_slots, item_ids_per_slot, item_rows, dim, label_bytes=0.0), q_in),
        *(with_carry(layer, i_in) for layer in mlp("query_fc", q_in, hidden)),
        *(with_carry(layer, out) for layer in mlp("item_fc", i_in, hidden)),
        cosine("cosine", out),
        loss("loss", 1),
    )
    return Workload(
        "matchnet",
        layers,
        JobDefaults(batch=4096.0, throughput=50_000.0, samples=1e9),
        f"Two-tower matching: query ({_num(query_rows)} x {dim}) and item ({_num(item_rows)} x {dim}) "
        f"embeddings -> MLP towers {_widths(hidden[:-1], hidden[-1])} -> cosine",
    )


def word2vec_nce(
    seq_len: int = 64,
    window: int = 5,
    negatives: int = 10,
    vocab: float = 250_000_000,
    dim: int = 128,
) -> Workload:
    """Word2vec (CBOW) with noise-contrastive estimation. A sample is a sentence chunk of `seq_len`
    positions; for each, the reader emits the 2 * `window` context ids (as PaddleRec's reader
    does), which are looked up in the input table and averaged; the target is scored against its own
    output row and `negatives` rows sampled from the unigram table (a sparse output table).

    Defaults: 64 positions, window 5 (640 context ids, 5,120 B raw ids per sample + 512 B targets),
    10 negatives, vocabulary 2.5e8 (word and id n-grams), dim 128: input table 128 GB + output table
    129 GB. Job: batch 4096 chunks, floor 20k chunks/s, 1e9 chunks.
    """
    context = 2 * window
    h = seq_len * dim
    layers = (
        embedding("input_embedding", seq_len, context, vocab, dim, label_bytes=0.0),
        elementwise("context_mean", h),
        with_carry(nce_output("nce_output", seq_len, negatives, vocab, dim), h),
        nce_score("nce_score", seq_len, negatives, dim),
    )
    return Workload(
        "word2vec-nce",
        layers,
        JobDefaults(batch=4096.0, throughput=20_000.0, samples=1e9),
        f"Word2vec CBOW with NCE: {_num(vocab)} x {dim} input and output tables, window {window}, "
        f"{negatives} negatives, {seq_len} positions/sample",
    )
