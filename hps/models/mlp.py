"""A plain MLP classifier as a LayeredModel: fc1..fcL (ReLU), fc_out, loss."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from hps.models.base import Activation, LayeredModel
from hps.models.layers import DenseLayer, SoftmaxLoss

LossLayer = SoftmaxLoss
"""Softmax cross-entropy of x["x"] against x["label"] (the name this module first gave it)."""


class MLP(LayeredModel):
    """features -> hidden widths (ReLU) -> classes logits -> cross-entropy.

    Layer names match `hps.workloads` "mlp": fc1..fcL, fc_out, loss.
    """

    def __init__(self, features: int = 64, hidden: Sequence[int] = (128, 64), classes: int = 2, *, rngs: nnx.Rngs):
        widths = (features, *hidden)
        layers = [DenseLayer(a, b, rngs=rngs) for a, b in zip(widths[:-1], widths[1:])]
        layers.append(DenseLayer(widths[-1], classes, last=True, rngs=rngs))
        layers.append(SoftmaxLoss())
        self.layers = nnx.List(layers)
        self.layer_names = (*(f"fc{i}" for i in range(1, len(hidden) + 1)), "fc_out", "loss")
        self.features, self.classes = features, classes

    def sample_batch(self, key: jax.Array, n: int) -> Activation:
        k_x, k_y = jax.random.split(key)
        return {
            "x": jax.random.normal(k_x, (n, self.features), jnp.float32),
            "label": jax.random.randint(k_y, (n,), 0, self.classes, jnp.int32),
        }
