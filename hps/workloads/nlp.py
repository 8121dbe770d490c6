"""Language workloads, built from the transformer hyperparameters."""

from __future__ import annotations

from hps.config.types import JobDefaults, Workload
from hps.workloads.layers import pretraining_heads, token_embedding, transformer_layer

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
        token_embedding("embedding", seq_len, vocab, hidden, max_position,
                        label_bytes=masked * _MASKED_LABEL_BYTES + 4.0),
    ]
    for i in range(layers):
        table.extend(transformer_layer(f"layer{i + 1}", seq_len, hidden, heads, ffn))
    table.append(pretraining_heads("heads", hidden, vocab, masked))
    return Workload(
        "bert-base", tuple(table), JobDefaults(batch=256.0, throughput=3000.0, samples=2.56e8),
        f"BERT pre-training: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, sequence {seq_len}",
    )
