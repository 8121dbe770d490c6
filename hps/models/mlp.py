"""A plain MLP classifier as a LayeredModel: fc1..fcL (ReLU), fc_out, loss."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from hps.models.base import Activation, LayeredModel, per_example_cross_entropy


class DenseLayer(nnx.Module):
    """x["x"] (n, d_in) -> (n, d_out), ReLU unless `last`; other keys pass through."""

    def __init__(self, d_in: int, d_out: int, *, last: bool = False, rngs: nnx.Rngs):
        self.linear = nnx.Linear(d_in, d_out, rngs=rngs)
        self.last = last

    def __call__(self, x: Activation) -> Activation:
        y = self.linear(x["x"])
        return {**x, "x": y if self.last else jax.nn.relu(y)}


class LossLayer(nnx.Module):
    """Softmax cross-entropy of x["x"] (logits) against x["label"]: per-example loss (n,)."""

    def __call__(self, x: Activation) -> jax.Array:
        return per_example_cross_entropy(x["x"], x["label"])


class MLP(LayeredModel):
    """features -> hidden widths (ReLU) -> classes logits -> cross-entropy.

    Layer names match `hps.workloads` "mlp": fc1..fcL, fc_out, loss.
    """

    def __init__(self, features: int = 64, hidden: Sequence[int] = (128, 64), classes: int = 2, *, rngs: nnx.Rngs):
        widths = (features, *hidden)
        layers = [DenseLayer(a, b, rngs=rngs) for a, b in zip(widths[:-1], widths[1:])]
        layers.append(DenseLayer(widths[-1], classes, last=True, rngs=rngs))
        layers.append(LossLayer())
        self.layers = nnx.List(layers)
        self.layer_names = (*(f"fc{i}" for i in range(1, len(hidden) + 1)), "fc_out", "loss")
        self.features, self.classes = features, classes

    def sample_batch(self, key: jax.Array, n: int) -> Activation:
        k_x, k_y = jax.random.split(key)
        return {
            "x": jax.random.normal(k_x, (n, self.features), jnp.float32),
            "label": jax.random.randint(k_y, (n,), 0, self.classes, jnp.int32),
        }
