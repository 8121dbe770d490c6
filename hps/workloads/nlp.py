"""Language workloads, built from the transformer hyperparameters."""

from __future__ import annotations

from hps.config.types import JobDefaults, Workload
from hps.errors import ConfigError
from hps.workloads.layers import (
    classification_head,
    loss,
    pretraining_heads,
    token_embedding,
    transformer_layer,
)

_MASKED_LABEL_BYTES = 2 * 8.0  # per masked position: its index and its label id (int64)


def bert_base(
    layers: int = 12,
    hidden: int = 768,
    heads: int = 12,
    ffn: int = 3072,
    seq_len: int = 128,
    vocab: int = 30522,
    max_position: int = 512,
    masked: int = 20,
) -> Workload:
    """BERT-base pre-training (masked LM + next sentence): the input embedding (a dense layer: the
    30522-row table is small and fully updated), one attention row and one FFN row per encoder
    layer, and the pre-training heads.

    Defaults: 12 layers, hidden 768, 12 heads, FFN 3072, sequence length 128 (use 512 for phase 2),
    vocabulary 30522, 512 positions, 20 masked positions per sequence (BERT's
    max_predictions_per_seq at 128): about 110 M parameters.
    Job: batch 256 sequences, floor 3000 sequences/s, 2.56e8 sequences (256 x 1M steps).
    """
    table = [
        token_embedding(
            "embedding", seq_len, vocab, hidden, max_position, label_bytes=masked * _MASKED_LABEL_BYTES + 4.0
        ),
    ]
    for i in range(layers):
        table.extend(transformer_layer(f"layer{i + 1}", seq_len, hidden, heads, ffn))
    table.append(pretraining_heads("heads", hidden, vocab, masked))
    return Workload(
        "bert-base",
        tuple(table),
        JobDefaults(batch=256.0, throughput=3000.0, samples=2.56e8),
        f"BERT pre-training: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, sequence {seq_len}",
    )


def transformer(
    layers: int = 4,
    hidden: int = 256,
    heads: int = 4,
    ffn: int = 1024,
    seq_len: int = 128,
    vocab: int = 30522,
    max_position: int = 512,
    classes: int = 2,
) -> Workload:
    """A BERT-style encoder for sequence classification: the input embedding (word + position +
    segment, LayerNorm; a dense layer), one attention row and one FFN row per encoder layer (post-LN),
    a classification head on the first position (pooler + classifier) and the softmax loss.
    `hps.models.transformer.Transformer` is the same network, layer for layer.

    Defaults: 4 layers, hidden 256, 4 heads, FFN 1024, sequence length 128, BERT's 30522-token
    vocabulary and 512 positions, 2 classes: about 11 M parameters.
    Job: batch 256 sequences, floor 2000 sequences/s, 1e8 sequences.
    """
    if hidden % heads:
        raise ConfigError("workload", "transformer.heads", f"must divide hidden ({hidden}), got {heads}")
    if seq_len > max_position:
        raise ConfigError(
            "workload", "transformer.seq_len", f"must be at most max_position ({max_position}), got {seq_len}"
        )
    table = [token_embedding("embedding", seq_len, vocab, hidden, max_position)]
    for i in range(layers):
        table.extend(transformer_layer(f"layer{i + 1}", seq_len, hidden, heads, ffn))
    table += [classification_head("head", hidden, classes), loss("loss", classes)]
    return Workload(
        "transformer",
        tuple(table),
        JobDefaults(batch=256.0, throughput=2000.0, samples=1e8),
        f"Transformer classifier: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, "
        f"sequence {seq_len}, vocabulary {vocab}",
    )
