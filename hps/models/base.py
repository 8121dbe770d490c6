"""The contract between a Flax model, the executor and `hps workload derive`.

A `LayeredModel` is an NNX module whose `layers` (an `nnx.List`) hold one NNX module per row of
the workload's layer table, in order, named by `layer_names`. A schedule cuts the model at layer
boundaries, so every layer is a function of the activation its predecessor returns:

- An activation is a dict of arrays whose leading axis is the batch (the per-sample axis the
  executor shards). Values a later layer needs (the label, dense features) travel in the dict.
- The first layer receives `sample_batch(key, n)`: the model's raw inputs plus "label".
- The last layer returns the per-example loss, shape (n,) float32. Training minimises its mean.

Parameters of `nnx.Embed` modules are embedding tables (the table's `sparse_param_bytes`); every
other `nnx.Param` is dense (`dense_param_bytes`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

Activation = dict[str, jax.Array]
"""Per-sample values between layers, leading axis the batch."""


class LayeredModel(nnx.Module):
    """Base class: subclasses set `self.layers` (nnx.List) and `self.layer_names` (tuple of str)
    and implement `sample_batch`."""

    layers: nnx.List
    layer_names: tuple[str, ...]
    learning_rate: float = 0.05
    """Plain SGD's step size `hps execute` trains it with unless told another (per unit of the
    mean loss's gradient); a model whose training at 0.05 leaves the stable range sets its own."""

    def sample_batch(self, key: jax.Array, n: int) -> Activation:
        """n synthetic samples: the first layer's input dict, including "label"."""
        raise NotImplementedError

    def __call__(self, batch: Activation) -> jax.Array:
        """Per-example loss (n,) of the whole model: every layer in order."""
        x = batch
        for layer in self.layers:
            x = layer(x)
        return x


def per_example_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Softmax cross-entropy per example: logits (n, classes) float, labels (n,) int -> (n,)."""
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.take_along_axis(log_probs, labels[:, None].astype(jnp.int32), axis=-1)[:, 0]


def parameter_bytes(module: nnx.Module) -> tuple[float, float]:
    """(dense, sparse) bytes of `module`'s `nnx.Param`s: sparse those of `nnx.Embed` modules
    (embedding tables), dense the rest; size x itemsize (4 B per fp32 element)."""

    def nbytes(node) -> float:
        leaves = jax.tree.leaves(nnx.state(node, nnx.Param))
        return float(sum(leaf.size * leaf.dtype.itemsize for leaf in leaves))

    sparse = float(sum(nbytes(m) for _, m in nnx.iter_modules(module) if isinstance(m, nnx.Embed)))
    return nbytes(module) - sparse, sparse


MAX_SAMPLE_BATCH = 2**31 - 1
"""Samples in one generated batch: array dimensions stay within int32."""


def check_sample_batch(model: LayeredModel, batch: int, what: str, copies: int = 1) -> None:
    """InstanceTooLarge, before anything is allocated, when `copies` generated batches of `batch`
    samples, and the activations the model's layers make of them, would pass the memory this
    process may use. The estimate is the input's bytes (from its shapes, `jax.eval_shape`)
    times (copies + the number of layers): each layer's output is taken to be about its input's
    size."""
    from hps.contract.memory import refuse_past_memory
    from hps.errors import InstanceTooLarge

    if batch > MAX_SAMPLE_BATCH:
        raise InstanceTooLarge(f"{what}: a batch of {batch:,} samples is past the {MAX_SAMPLE_BATCH:,} one array holds")
    shapes = jax.eval_shape(lambda key: model.sample_batch(key, batch), jax.random.key(0))
    one = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(shapes))
    refuse_past_memory(f"{what} at {batch:,} samples", one * (copies + len(model.layers)))
