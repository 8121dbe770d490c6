"""Sparse recommendation and embedding workloads (the HeterPS setting).

Each architecture builds its layer table from hyperparameters: one or a few sparse embedding layers
first (tables of hundreds of GiB, raw feature ids of a few KiB per sample read from input), then
dense layers. A cheapest plan typically puts the embeddings on CPU nodes (memory, io) and the MLP on
GPUs. Values that skip a layer on their way to a later one (e.g. embeddings around the bottom MLP)
are added to that layer's act_bytes with `with_carry`, because a pipeline stage must forward them.
"""

from __future__ import annotations

import dataclasses

from hps.config.types import JobDefaults, Layer
from hps.workloads.entry import Architecture, ZooEntry, architecture, table_size
from hps.workloads.layers import FP32_BYTES, LABEL_BYTES, concat, elementwise, loss, mlp, with_carry
from hps.workloads.sparse_layers import (
    cosine,
    dot_interaction,
    embedding,
    fm_interaction,
    nce_output,
    nce_score,
)


@dataclasses.dataclass(frozen=True)
class SlotInput:
    """A group of hyperparameters: `slots` sparse feature slots per sample, `ids_per_slot` ids per
    slot and sample (int64 each in the input), looked up in a table of `rows` rows (one sparse
    layer, `embedding`)."""

    slots: int
    ids_per_slot: float
    rows: float

    def lookup(self, name: str, dim: int, label_bytes: float = LABEL_BYTES) -> Layer:
        """The sum-pooled lookup of these slots in a table of `dim` fp32 values per row."""
        return embedding(name, self.slots, self.ids_per_slot, self.rows, dim, label_bytes=label_bytes)


@architecture()
class SlotsMLP(Architecture):
    """Sparse slots looked up in one shared table (sum-pooled per slot), concatenated with dense
    features and fed to an MLP: CTR-DNN's network and Wide & Deep's deep part (defaults CTR-DNN's).

    Hyperparameters: `slots` sparse feature slots per sample; `ids_per_slot` feature ids per slot
    and sample (int64 each in the input); `rows` rows of the table, `dim` fp32 values per row;
    `dense_features` fp32 features read by the embedding layer and passed on; `hidden` the MLP's
    hidden widths.
    """

    slots: int = 26
    ids_per_slot: float = 10
    rows: float = 2_000_000_000
    dim: int = 64
    dense_features: int = 13
    hidden: tuple[int, ...] = (512, 256, 128)
    depth = ("hidden",)

    def deep_rows(self) -> int:
        """Rows of `deep`: the embedding, concat, fc1..fcL and fc_out."""
        return len(self.hidden) + 3

    def deep(self, embedding_name: str, outputs: int, label_bytes: float = LABEL_BYTES) -> tuple[Layer, ...]:
        """Rows `embedding_name`, concat, fc1..fcL, fc_out (`outputs` logits); the embedding reads
        `label_bytes` of labels per sample."""
        d_in = self.slots * self.dim + self.dense_features
        lookup = embedding(
            embedding_name,
            self.slots,
            self.ids_per_slot,
            self.rows,
            self.dim,
            label_bytes=label_bytes,
            dense_features=self.dense_features,
        )
        return (lookup, concat("concat", d_in), *mlp("fc", d_in, self.hidden, out=outputs))


@architecture(
    "HeterPS CTR-DNN: {slots} pooled sparse slots ({table} table) + {dense_features} dense features -> "
    "MLP {hidden}-{classes}"
)
class CTRDNN(SlotsMLP):
    """HeterPS's CTR-DNN: sparse slots -> embedding (sum-pooled per slot) -> concat with dense
    features -> MLP -> softmax loss over `classes` outputs.

    Defaults: 26 sparse slots with 10 ids each (2,080 B of raw ids per sample), one shared table of
    2e9 rows x 64 (4 B) = 512 GB (477 GiB), 13 dense features, hidden widths 512-256-128, 2 classes.
    """

    classes: int = 2

    def row_count(self) -> int:
        return self.deep_rows() + 1

    def table(self) -> tuple[Layer, ...]:
        return (*self.deep("embedding", self.classes), loss("loss", self.classes))

    def derived(self, layers: tuple[Layer, ...]) -> dict[str, object]:
        return {"table": table_size(layers[0].sparse_param_bytes)}


@architecture(
    "Wide & Deep: wide cross features ({wide_rows} x 1) + deep {slots}-slot embedding ({rows} x {dim}) "
    "-> MLP {hidden}-1"
)
class WideDeep(SlotsMLP):
    """Wide & Deep: a wide sparse linear model over cross-product features (a dim-1 embedding of
    `wide_slots` slots x `wide_ids_per_slot` ids over `wide_rows` rows) plus the deep part (the
    `SlotsMLP` rows, ending in one logit); the two logits are summed into a sigmoid loss.

    Defaults: wide part 16 cross slots x 8 ids over 1e10 rows x 1 (40 GB); deep part 26 slots x 8 ids
    over 1e9 rows x 64 (256 GB); 13 dense features; hidden widths 1024-512-256 (as in the paper);
    1,664 B of raw ids per sample.
    """

    ids_per_slot: float = 8
    rows: float = 1_000_000_000
    hidden: tuple[int, ...] = (1024, 512, 256)
    wide: SlotInput = SlotInput(16, 8, 10_000_000_000)

    def row_count(self) -> int:
        return self.deep_rows() + 2  # wide, the deep rows, loss

    def table(self) -> tuple[Layer, ...]:
        # The wide part's pooled weights ride along to the output.
        deep = self.deep("deep_embedding", 1, label_bytes=0.0)
        return (self.wide.lookup("wide", 1), *(with_carry(layer, self.wide.slots) for layer in deep), loss("loss", 1))


@architecture("DeepFM: {fields} fields ({rows} x {dim} shared embedding) -> FM second order + deep MLP {hidden}-1")
class DeepFM(Architecture):
    """DeepFM: one sparse table whose rows hold a field value's embedding and its first-order weight
    (dim + 1 columns), the FM second-order interaction, and a deep MLP on the same embeddings; the
    first-order, FM and deep logits are summed into a sigmoid loss.

    Defaults: 39 fields (Criteo: 13 bucketised numeric + 26 categorical) x 8 ids (2,496 B raw ids per
    sample), 1e9 rows, embedding dim 64 (+1 first-order weight: 260 GB), hidden widths 400-400-400
    (as in the paper).

    Hyperparameters: `fields` feature fields per sample (each sum-pooled); `ids_per_field` ids per
    field and sample; `rows` rows of the table (dim + 1 fp32 values each); `dim` embedding width;
    `hidden` the deep MLP's hidden widths.
    """

    fields: int = 39
    ids_per_field: float = 8
    rows: float = 1_000_000_000
    dim: int = 64
    hidden: tuple[int, ...] = (400, 400, 400)
    depth = ("hidden",)

    def row_count(self) -> int:
        return len(self.hidden) + 4  # embedding, fm_second_order, fc1..fcL, fc_out, loss

    def table(self) -> tuple[Layer, ...]:
        d_in = self.fields * self.dim
        carried = self.fields + 1  # first-order weights and the FM term ride along to the output
        return (
            embedding("embedding", self.fields, self.ids_per_field, self.rows, self.dim + 1),
            with_carry(fm_interaction("fm_second_order", self.fields, self.dim), d_in + self.fields),
            *(with_carry(layer, carried) for layer in mlp("fc", d_in, self.hidden, out=1)),
            loss("loss", 1),
        )


@architecture(
    "DLRM (MLPerf Criteo 1TB shape): {tables} tables x {rows_per_table} x {dim}, bottom MLP "
    "{bottom_hidden}-{dim}, dot interaction, top MLP {top}-1"
)
class DLRM(Architecture):
    """DLRM as in the MLPerf Criteo 1TB config: bottom MLP on dense features, one pooled embedding
    per table, dot interaction, top MLP, sigmoid loss.

    Defaults: 26 tables x 40M rows (the MLPerf row cap, applied to every table) x dim 128 = 532 GB
    (496 GiB); 8 ids per table (multi-hot, about the mean of MLPerf DLRM-DCNv2's multi-hot sizes;
    1,664 B raw ids per sample); 13 dense features; bottom MLP 13-512-256 then a last layer of width
    `dim` (128); top MLP 1024-1024-512-256-1.

    Hyperparameters: `tables` embedding tables (one categorical feature each; one sparse layer);
    `ids_per_table` ids looked up and sum-pooled per table and sample; `rows_per_table` rows of
    each; `dim` embedding width and bottom-MLP output width; `dense_features` fp32 inputs of the
    bottom MLP; `bottom_hidden`, `top` the hidden widths of the two MLPs.
    """

    tables: int = 26
    ids_per_table: float = 8
    rows_per_table: float = 40_000_000
    dim: int = 128
    dense_features: int = 13
    bottom_hidden: tuple[int, ...] = (512, 256)
    top: tuple[int, ...] = (1024, 1024, 512, 256)
    depth = ("bottom_hidden", "top")

    def row_count(self) -> int:
        return len(self.bottom_hidden) + len(self.top) + 5  # embedding, bottom, interaction, top, loss

    def table(self) -> tuple[Layer, ...]:
        pooled = self.tables * self.dim
        interaction = dot_interaction("interaction", self.tables + 1, self.dim)
        rows = self.tables * self.rows_per_table
        bottom = mlp("bottom_fc", self.dense_features, (*self.bottom_hidden, self.dim))
        return (
            embedding("embedding", self.tables, self.ids_per_table, rows, self.dim, dense_features=self.dense_features),
            *(with_carry(layer, pooled) for layer in bottom),
            interaction,
            *mlp("top_fc", int(interaction.act_bytes // FP32_BYTES), self.top, out=1),
            loss("loss", 1),
        )


@architecture(
    "Two-tower matching: query ({query_rows} x {dim}) and item ({item_rows} x {dim}) embeddings -> "
    "MLP towers {hidden} -> cosine"
)
class MatchNet(Architecture):
    """Two-tower matching (MatchNet / DSSM style): query features -> embedding -> query MLP; item
    features -> embedding -> item MLP; cosine similarity -> sigmoid loss.

    Defaults: query 4 slots x 32 ids over 1e9 rows, item 4 slots x 32 ids over 5e8 rows, dim 64
    (256 GB + 128 GB; 2,048 B raw ids per sample); both towers 512-256-128.

    Hyperparameters, per tower (query_, item_): `slots` sparse slots (each sum-pooled),
    `ids_per_slot` ids per slot and sample, `rows` rows of its table; shared: `dim` embedding width,
    `hidden` each tower's MLP widths (the last is the width of the matched vectors).
    """

    query: SlotInput = SlotInput(4, 32, 1_000_000_000)
    item: SlotInput = SlotInput(4, 32, 500_000_000)
    dim: int = 64
    hidden: tuple[int, ...] = (512, 256, 128)
    depth = ("hidden",)

    def row_count(self) -> int:
        return 2 * len(self.hidden) + 4  # two embeddings, two towers, cosine, loss

    def table(self) -> tuple[Layer, ...]:
        q_in, i_in, out = self.query.slots * self.dim, self.item.slots * self.dim, self.hidden[-1]
        return (
            self.query.lookup("query_embedding", self.dim),
            with_carry(self.item.lookup("item_embedding", self.dim, label_bytes=0.0), q_in),
            *(with_carry(layer, i_in) for layer in mlp("query_fc", q_in, self.hidden)),
            *(with_carry(layer, out) for layer in mlp("item_fc", i_in, self.hidden)),
            cosine("cosine", out),
            loss("loss", 1),
        )


@architecture(
    "Word2vec CBOW with NCE: {vocab} x {dim} input and output tables, window {window}, {negatives} "
    "negatives, {seq_len} positions/sample"
)
class Word2VecNCE(Architecture):
    """Word2vec (CBOW) with noise-contrastive estimation. A sample is a sentence chunk of `seq_len`
    positions; for each, the reader emits the 2 * `window` context ids (as PaddleRec's reader
    does), which are looked up in the input table and averaged; the target is scored against its own
    output row and `negatives` rows sampled from the unigram table (a sparse output table).

    Defaults: 64 positions, window 5 (640 context ids, 5,120 B raw ids per sample + 512 B targets),
    10 negatives, vocabulary 2.5e8 (word and id n-grams), dim 128: input table 128 GB + output table
    129 GB. (`vocab`: rows of each table; `dim`: fp32 values per row.)
    """

    seq_len: int = 64
    window: int = 5
    negatives: int = 10
    vocab: float = 250_000_000
    dim: int = 128

    def row_count(self) -> int:
        return 4

    def table(self) -> tuple[Layer, ...]:
        h = self.seq_len * self.dim
        return (
            embedding("input_embedding", self.seq_len, 2 * self.window, self.vocab, self.dim, label_bytes=0.0),
            elementwise("context_mean", h),
            with_carry(nce_output("nce_output", self.seq_len, self.negatives, self.vocab, self.dim), h),
            nce_score("nce_score", self.seq_len, self.negatives, self.dim),
        )


ctr_dnn = ZooEntry("ctr-dnn", CTRDNN(), JobDefaults(batch=4096.0, throughput=100_000.0, samples=5e9))
"""Job: batch 4096, floor 100k samples/s, 5e9 samples."""
wide_deep = ZooEntry("wide-deep", WideDeep(), JobDefaults(batch=4096.0, throughput=50_000.0, samples=2e9))
"""Job: batch 4096, floor 50k samples/s, 2e9 samples."""
deepfm = ZooEntry("deepfm", DeepFM(), JobDefaults(batch=4096.0, throughput=100_000.0, samples=4e9))
"""Job: batch 4096, floor 100k samples/s, 4e9 samples."""
dlrm = ZooEntry("dlrm", DLRM(), JobDefaults(batch=8192.0, throughput=200_000.0, samples=4.2e9))
"""Job: batch 8192, floor 200k samples/s, 4.2e9 samples (one Criteo 1TB epoch)."""
matchnet = ZooEntry("matchnet", MatchNet(), JobDefaults(batch=4096.0, throughput=50_000.0, samples=1e9))
"""Job: batch 4096, floor 50k samples/s, 1e9 samples."""
word2vec_nce = ZooEntry("word2vec-nce", Word2VecNCE(), JobDefaults(batch=4096.0, throughput=20_000.0, samples=1e9))
"""Job: batch 4096 chunks, floor 20k chunks/s, 1e9 chunks."""
