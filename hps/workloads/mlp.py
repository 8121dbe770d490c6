"""A plain MLP classifier: the smallest dense workload, and the executor's simplest test model."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hps.config.types import JobDefaults, Workload
from hps.workloads.layers import FP32_BYTES, LABEL_BYTES, dense, loss, mlp


def mlp_classifier(features: int = 64, hidden: Sequence[int] = (128, 64), classes: int = 2) -> Workload:
    """`features` fp32 inputs -> hidden widths (ReLU) -> `classes` logits -> softmax loss; rows
    fc1..fcL, fc_out, loss (`hps.models.mlp.MLP`, layer for layer). fc1 reads the raw sample:
    features * 4 + 4 (label) bytes.

    Defaults: 64 features, hidden 128-64, 2 classes (about 17 k parameters: laptop-sized already).
    Job: batch 256, floor 10k samples/s, 1e7 samples.
    """
    fcs = mlp("fc", features, hidden)
    first = dataclasses.replace(fcs[0], io_bytes=features * FP32_BYTES + LABEL_BYTES)
    layers = (first, *fcs[1:], dense("fc_out", hidden[-1], classes), loss("loss", classes))
    widths = "-".join(str(w) for w in (features, *hidden, classes))
    return Workload(
        "mlp", layers, JobDefaults(batch=256.0, throughput=10_000.0, samples=1e7), f"MLP classifier {widths}"
    )
