"""Plain single-device training of a LayeredModel: the reference an executed plan must equal."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from hps.models.base import LayeredModel


def layer_states(model: LayeredModel) -> list:
    """The param state of each layer, in order (the pytree the executor's stages hold)."""
    return [nnx.split(layer)[1] for layer in model.layers]


def single_device_training(model: LayeredModel, batches, optimizer: optax.GradientTransformation, device=None):
    """Train a copy of the model's layer states on one device (default the first of
    jax.devices(); the executor passes its first stage's, so both run on one backend) with the
    same optimizer and batches, at the caller's matmul precision.

    Returns (layer states after the last batch, the mean loss of each step).
    """
    device = device or jax.devices()[0]
    graphdefs = [nnx.split(layer)[0] for layer in model.layers]
    states = jax.device_put(jax.tree.map(jnp.copy, layer_states(model)), device)

    def mean_loss(params, batch):
        x = batch
        for graphdef, state in zip(graphdefs, params):
            x = nnx.merge(graphdef, state)(x)
        return jnp.mean(x)

    @jax.jit
    def step(params, opt_state, batch):
        loss, grads = jax.value_and_grad(mean_loss)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    opt_state = optimizer.init(states)
    losses = []
    for batch in batches:
        states, opt_state, loss = step(states, opt_state, jax.device_put(batch, device))
        losses.append(float(loss))
    return states, losses


CHECK_PRECISION = "highest"
"""Matmul precision of both trainings `--check` compares (``jax.default_matmul_precision``):
full float32 products, so neither side rounds inputs to bf16/TF32 as GPUs do by default."""


def parameter_differences(got, want, names) -> dict:
    """How far the executed parameters are from the reference's: got / want are lists (one per
    layer) of param pytrees; names[i] names layer i. Returns {"max_abs_diff": max |got − want|
    over every element, "max_rel_diff": `max_relative_difference`, "worst_parameter": the
    "layer/path" of the array with the largest relative difference}. Differences are NaN
    (and the worst parameter the first non-finite one) when any parameter is not finite."""
    worst, worst_name, largest = -1.0, "", 0.0
    for name, layer_got, layer_want in zip(names, got, want, strict=True):
        pairs = zip(jax.tree.leaves_with_path(layer_got), jax.tree.leaves(layer_want), strict=True)
        for (path, a), b in pairs:
            if path and isinstance(path[-1], jax.tree_util.GetAttrKey):
                path = path[:-1]  # an nnx.Param's ".value"
            label = "/".join([name, jax.tree_util.keystr(path, simple=True, separator="/")][: 1 + bool(path)])
            rel = max_relative_difference([a], [b])
            if math.isnan(rel):
                return {"max_abs_diff": math.nan, "max_rel_diff": math.nan, "worst_parameter": label}
            largest = max(largest, float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b)), initial=0.0)))
            if rel > worst:
                worst, worst_name = rel, label
    return {"max_abs_diff": largest, "max_rel_diff": max(worst, 0.0), "worst_parameter": worst_name}


def max_relative_difference(got, want) -> float:
    """max over parameter arrays of max|got − want| / max|want| (0 for all-zero arrays); NaN
    when any parameter of either is not finite, so no comparison passes on NaN (max(0, nan) is
    0 in Python, and np.max skips nothing but compares NaN false)."""
    worst = 0.0
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            return math.nan
        scale = float(np.max(np.abs(b), initial=0.0))
        diff = float(np.max(np.abs(a - b), initial=0.0))
        worst = max(worst, diff / scale if scale > 0 else diff)
    return worst
