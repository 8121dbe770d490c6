"""GNMT, the LSTM sequence-to-sequence translator of the Themis evaluation."""

from __future__ import annotations

import dataclasses

from hps.config.types import JobDefaults, Layer
from hps.errors import ConfigError
from hps.workloads.entry import Architecture, ZooEntry, architecture, parameter_count
from hps.workloads.layers import ID_BYTES, dense, loss, merge_layers, token_embedding, with_carry
from hps.workloads.recurrent_layers import additive_attention, lstm

WMT16_EN_DE_PAIRS = 4.5e6
"""Sentence pairs of the WMT16 English-German training set (MLPerf's GNMT data)."""


@architecture(
    "GNMT, {parameters} parameters: {encoder_layers} + {decoder_layers} LSTM layers of {hidden}, attention, "
    "{vocab} wordpieces ({embedding}), {seq_len} tokens per sentence"
)
class GNMT(Architecture):
    """GNMT (Wu et al., "Google's Neural Machine Translation System", 2016, Section 3): a stack of
    LSTM encoder layers whose first layer is bidirectional (its two outputs concatenated), LSTM
    decoder layers, and normalized additive attention placed as in GNMT v2 (MLPerf's reference,
    tensorflow/nmt): the first decoder layer's output queries the encoder's top output, and the
    context joins the input of every later decoder layer. Residual adds are folded into the LSTM
    rows. A sample is one sentence pair of `seq_len` source and `seq_len` target wordpieces.

    Rows: source_embedding, encoder1..N, target_embedding, decoder1, attention, decoder2..M,
    classifier (projection to the vocabulary + softmax loss). The encoder output rides along to the
    attention, and the context to the last decoder layer (`with_carry`).

    Defaults: Wu et al.'s 8 encoder + 8 decoder layers of 1024 units and a 32,000-wordpiece
    vocabulary with separate source, target and softmax matrices: 277 M parameters. MLPerf's GNMT v2
    (4 + 4 layers, one shared embedding) is 160 M.

    Hyperparameters: `encoder_layers`, `decoder_layers` LSTM layers (at least 2 in the decoder: the
    attention feeds the second), `hidden` units per layer and direction (also the embedding width),
    `vocab` wordpieces (one vocabulary for source and target), `seq_len` wordpieces per source and
    per target sentence (50: MLPerf's training maximum, --max-length-train, counting the start and
    end tokens), `shared_embedding` one embedding table for source and target (counted in
    source_embedding).
    """

    encoder_layers: int = 8
    decoder_layers: int = 8
    hidden: int = 1024
    vocab: int = 32_000
    seq_len: int = 50
    shared_embedding: bool = False
    depth = ("encoder_layers", "decoder_layers")

    def row_count(self) -> int:
        return self.encoder_layers + self.decoder_layers + 4  # two embeddings, attention, classifier

    def check(self, entry: str) -> None:
        if self.decoder_layers < 2:
            raise ConfigError(
                "workload",
                f"{entry}.decoder_layers",
                f"must be at least 2 (the attention feeds decoder2), got {self.decoder_layers}",
            )

    def table(self) -> tuple[Layer, ...]:
        s, h, v = self.seq_len, self.hidden, self.vocab
        encoded = s * h  # the encoder's top output, carried to the attention
        encoder = [lstm("encoder1", s, h, h, directions=2)]
        encoder += [lstm(f"encoder{i}", s, 2 * h if i == 2 else h, h) for i in range(2, self.encoder_layers + 1)]
        target = token_embedding(
            "target_embedding", s, h, (v,), ids_per_token=1, layer_norm=False, label_bytes=ID_BYTES
        )
        if self.shared_embedding:
            target = dataclasses.replace(target, dense_param_bytes=0.0)
        decoder = [lstm(f"decoder{i}", s, 2 * h, h) for i in range(2, self.decoder_layers + 1)]
        classifier = merge_layers(
            "classifier", [dense("classifier.proj", h, v, rows=s), loss("classifier.loss", s * v)]
        )
        return (
            token_embedding("source_embedding", s, h, (v,), ids_per_token=1, layer_norm=False, label_bytes=0.0),
            *encoder,
            with_carry(target, encoded),
            with_carry(lstm("decoder1", s, h, h), encoded),
            additive_attention("attention", s, s, h),
            *(with_carry(layer, s * h) for layer in decoder[:-1]),
            decoder[-1],
            classifier,
        )

    def derived(self, layers: tuple[Layer, ...]) -> dict[str, object]:
        embedding = "shared embedding" if self.shared_embedding else "separate embeddings"
        return {"parameters": parameter_count(layers), "embedding": embedding}


gnmt = ZooEntry("gnmt", GNMT(), JobDefaults(batch=1024.0, throughput=5000.0, samples=6 * WMT16_EN_DE_PAIRS))
"""GNMT at Wu et al.'s size (277 M parameters, 20 rows). Job: MLPerf's GNMT training, WMT16
English-German for 6 epochs (the NVIDIA reference's default; 2.7e7 sentence pairs) at a global batch
of 1024 pairs (8 GPUs x 128), with a floor of 5000 pairs/s (1.5 hours); the model fits a device
whole, so no micro-batching (inf) and no state sharding ("none")."""
