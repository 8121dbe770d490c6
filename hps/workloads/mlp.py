"""A plain MLP classifier: the smallest dense workload, and the executor's simplest test model."""

from __future__ import annotations

import dataclasses

from hps.config.types import JobDefaults, Layer
from hps.workloads.entry import Architecture, ZooEntry, architecture
from hps.workloads.layers import FP32_BYTES, LABEL_BYTES, loss, mlp


@architecture("MLP classifier {features}-{hidden}-{classes}")
class MLPClassifier(Architecture):
    """`features` fp32 inputs -> hidden widths (ReLU) -> `classes` logits -> softmax loss; rows
    fc1..fcL, fc_out, loss (`hps.models.mlp.MLP`, layer for layer). fc1 reads the raw sample:
    features * 4 + 4 (label) bytes.

    Defaults: 64 features, hidden 128-64, 2 classes (about 17 k parameters: laptop-sized already).
    """

    features: int = 64
    hidden: tuple[int, ...] = (128, 64)
    classes: int = 2
    depth = ("hidden",)

    def row_count(self) -> int:
        return len(self.hidden) + 2  # fc1..fcL, fc_out, loss

    def table(self) -> tuple[Layer, ...]:
        fcs = mlp("fc", self.features, self.hidden, out=self.classes)
        first = dataclasses.replace(fcs[0], io_bytes=self.features * FP32_BYTES + LABEL_BYTES)
        return (first, *fcs[1:], loss("loss", self.classes))


mlp_classifier = ZooEntry("mlp", MLPClassifier(), JobDefaults(batch=256.0, throughput=10_000.0, samples=1e7))
"""Job: batch 256, floor 10k samples/s, 1e7 samples."""
