"""Language workloads, built from the transformer hyperparameters: BERT-style encoders here,
decoder-only language models in `hps.workloads.llm`."""

from __future__ import annotations

import typing

from hps.config.types import JobDefaults, Layer
from hps.errors import ConfigError
from hps.workloads.entry import Architecture, ZooEntry, architecture
from hps.workloads.layers import LABEL_BYTES, loss
from hps.workloads.transformer_layers import (
    FP32_STANDARD,
    Numerics,
    classification_head,
    input_embedding,
    pretraining_heads,
    transformer_layer,
)

_MASKED_LABEL_BYTES = 2 * 8.0  # per masked position: its index and its label id (int64)
_SEGMENT_TYPES = 2  # BERT's token-type table: sentence A or B


@architecture()
class TransformerShape(Architecture):
    """The sizes every transformer of the zoo has: `layers` layers of one attention row and one FFN
    row each (see `hps.workloads.transformer_layers.transformer_layer`), model width `hidden`
    (values per token), `heads` attention heads of width hidden / heads, FFN inner width `ffn`,
    `seq_len` tokens per sample, and a word-embedding table of `vocab` rows.

    `numerics` (a class attribute, not a hyperparameter: the Flax models take the hyperparameters)
    says how the family holds activations: bytes per value, FlashAttention or an S x S score
    matrix, dropout or none (`hps.workloads.transformer_layers.Numerics`)."""

    layers: int
    hidden: int
    heads: int
    ffn: int
    seq_len: int
    vocab: int
    depth = ("layers",)
    numerics: typing.ClassVar[Numerics] = FP32_STANDARD

    def check(self, entry: str) -> None:
        if self.hidden % self.heads:
            raise ConfigError("workload", f"{entry}.heads", f"must divide hidden ({self.hidden}), got {self.heads}")

    def layer_numerics(self) -> Numerics:
        """The numerics the table's rows are built with: the family's `numerics`."""
        return self.numerics

    def blocks(self, kv_heads: int | None = None, gated: bool = False) -> tuple[Layer, ...]:
        """The 2 * `layers` rows layer{i}.attention, layer{i}.ffn (grouped-query with `kv_heads`;
        SwiGLU FFN when `gated`)."""
        rows, numerics = [], self.layer_numerics()
        for i in range(self.layers):
            rows.extend(
                transformer_layer(
                    f"layer{i + 1}", self.seq_len, self.hidden, self.heads, self.ffn, kv_heads, gated, numerics
                )
            )
        return tuple(rows)


@architecture()
class Encoder(TransformerShape):
    """A BERT-style (post-LN) encoder: the input embedding (word + position + segment tables,
    LayerNorm; a dense layer, the tables being small and fully updated) and the transformer rows.
    `max_position`: rows of the learned position table, the longest sequence it takes."""

    max_position: int

    def check(self, entry: str) -> None:
        super().check(entry)
        if self.seq_len > self.max_position:
            raise ConfigError(
                "workload",
                f"{entry}.seq_len",
                f"must be at most max_position ({self.max_position}), got {self.seq_len}",
            )

    def encoder(self, label_bytes: float) -> tuple[Layer, ...]:
        """The embedding row (reading `label_bytes` of labels per sample) and the transformer rows."""
        tables = (self.vocab, self.max_position, _SEGMENT_TYPES)
        embedding = input_embedding(
            "embedding", self.seq_len, self.hidden, tables, self.numerics, label_bytes=label_bytes
        )
        return (embedding, *self.blocks())


@architecture("BERT pre-training: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, sequence {seq_len}")
class BertPretraining(Encoder):
    """BERT pre-training (masked LM + next sentence; Devlin et al. 2019): the encoder and the
    pre-training heads (pooler + next-sentence classifier, masked-LM head tied to the word table).

    Defaults (BERT-base): 12 layers, hidden 768, 12 heads, FFN 3072, sequence length 128 (use 512
    for phase 2), vocabulary 30522, 512 positions, 20 masked positions per sequence (BERT's
    max_predictions_per_seq at 128): about 110 M parameters. `masked`: masked positions per
    sequence that the masked-LM head predicts.

    Numerics: fp32 activations, attention through the S x S scores (the published model), dropout
    0.1 "on all layers" (Devlin et al. 2019, App. A.2; the released configuration also drops
    attention probabilities at 0.1), so each block keeps its masks (`stash_bytes`).
    """

    masked: int
    numerics = Numerics(dropout=True)

    def row_count(self) -> int:
        return 2 * self.layers + 2  # embedding, the layers' rows, heads

    def table(self) -> tuple[Layer, ...]:
        encoder = self.encoder(label_bytes=self.masked * _MASKED_LABEL_BYTES + LABEL_BYTES)
        return (*encoder, pretraining_heads("heads", self.hidden, self.vocab, self.masked))


@architecture(
    "Transformer classifier: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, sequence {seq_len}, "
    "vocabulary {vocab}"
)
class EncoderClassifier(Encoder):
    """A BERT-style encoder for sequence classification: the encoder, a classification head on the
    first position (pooler + classifier) and the softmax loss. `hps.models.transformer.Transformer`
    is the same network, layer for layer.

    Defaults: 4 layers, hidden 256, 4 heads, FFN 1024, sequence length 128, BERT's 30522-token
    vocabulary and 512 positions, 2 classes (`classes`: softmax outputs): about 11 M parameters.
    Numerics as the Flax model computes: fp32, the S x S scores materialised, no dropout.
    """

    classes: int

    def row_count(self) -> int:
        return 2 * self.layers + 3  # embedding, the layers' rows, head, loss

    def table(self) -> tuple[Layer, ...]:
        head = (classification_head("head", self.hidden, self.classes), loss("loss", self.classes))
        return (*self.encoder(label_bytes=LABEL_BYTES), *head)


bert_base = ZooEntry(
    "bert-base",
    BertPretraining(layers=12, hidden=768, heads=12, ffn=3072, seq_len=128, vocab=30522, max_position=512, masked=20),
    JobDefaults(batch=256.0, throughput=3000.0, samples=2.56e8),
)
"""Job: batch 256 sequences, floor 3000 sequences/s, 2.56e8 sequences (256 x 1M steps)."""
transformer = ZooEntry(
    "transformer",
    EncoderClassifier(layers=4, hidden=256, heads=4, ffn=1024, seq_len=128, vocab=30522, max_position=512, classes=2),
    JobDefaults(batch=256.0, throughput=2000.0, samples=1e8),
)
"""Job: batch 256 sequences, floor 2000 sequences/s, 1e8 sequences."""
