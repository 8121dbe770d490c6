"""`hps profile`: measure each layer's time per sample on each device kind, so the cost model
can use measured numbers instead of the roofline (a workload's measured per-type times).

A layer is timed exactly as the executor runs it: a one-layer stage on the type's whole pool of n
devices (a data-parallel mesh, so the devices contend for the host as a stage's replicas do),
its forward (with vjp residuals) and backward each blocked until ready, on the activation the
preceding layers produce for a micro-batch of `batch` samples (batch / n per device). Time per
sample = those seconds / (batch / n): the placement model's per-replica t(l, t), so
compute = (B/k)·Σ t matches a stage of k = n replicas run with micro-batches of `batch`.
Each time is the median of `repeats` runs (`measured_layer_seconds`).

What a per-sample time cannot hold: the fixed cost of each call (dispatch, a dense gradient of an
embedding table) is spread over the samples of the profiled micro-batch, so profile at the
micro-batch the plan will run; and a layer timed alone pays its own call, while a stage of
several layers pays one, so small layers at small batches are over-counted.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh

from hps.config.types import Workload
from hps.executor.pipeline import compile_pipeline
from hps.executor.stages import build_stage, split_float
from hps.models.base import LayeredModel


def layer_inputs(model: LayeredModel, batch: dict) -> list:
    """The activation entering each layer (the batch for layer 0), computed on the host device."""
    inputs, x = [], batch
    for layer in model.layers:
        inputs.append(x)
        x = layer(x)
    return inputs


def profile_layers(
    model: LayeredModel, pools: dict[str, list], batch: int, *, repeats: int = 3, seed: int = 0, progress=None
) -> dict[str, list[float]]:
    """{type name: [seconds per sample of each layer]} measured on each type's device pool;
    batch must divide by every pool's size.

    progress: optional callable(type name, layer index), called before each measurement.
    """
    optimizer = optax.sgd(0.0)
    inputs = layer_inputs(model, model.sample_batch(jax.random.key(seed), batch))
    times: dict[str, list[float]] = {}
    for name, devices in pools.items():
        mesh = Mesh(np.array(devices), ("d0",))
        per_device = batch // len(devices)
        per_layer = []
        for index, x in enumerate(inputs):
            if progress:
                progress(name, index)
            stage = build_stage(0, name, index, index, model, mesh, ("d0",), np.zeros((1, 1), np.int32), optimizer)
            piece = compile_pipeline([stage], optimizer)[0]
            (seconds,) = measured_layer_seconds(piece, [x], repeats, index == 0)
            per_layer.append(seconds / per_device)
        times[name] = per_layer
    return times


def measured_layer_seconds(piece, batches: list, repeats: int, reads_input: bool) -> list[float]:
    """Seconds of one forward + backward of a one-layer stage on each activation in `batches`,
    timed as the executor's measurement pass times a stage (`hps.executor.measure`): each piece
    blocked until ready, the first layer's move of its input from the host included (the io
    term). The median of `repeats` rounds after a compiling one; the batches are timed in turn
    within each round, so drift on a shared machine hits them alike."""
    stage = piece.stage

    def one_call(x, placed) -> float:
        start = time.perf_counter()
        inputs = jax.block_until_ready(jax.device_put(x, stage.batch_sharding)) if reads_input else placed
        x_float, x_other = split_float(inputs)
        y, _, residuals = jax.block_until_ready(piece.forward(stage.params, x_float, x_other))
        seed = jax.block_until_ready(jax.tree.map(lambda v: jnp.full_like(v, 1.0 / v.shape[0]), y))
        middle = time.perf_counter()
        jax.block_until_ready(piece.backward(residuals, seed))
        return time.perf_counter() - middle + (middle - start)

    placed = [jax.device_put(x, stage.batch_sharding) for x in batches]
    for x, p in zip(batches, placed):
        one_call(x, p)
    rounds = [[one_call(x, p) for x, p in zip(batches, placed)] for _ in range(repeats)]
    return np.median(np.asarray(rounds), axis=0).tolist()


def with_measured_times(workload: Workload, times: dict[str, list[float]]) -> Workload:
    """The workload with each layer's measured_time updated by `times` (other types kept)."""
    layers = tuple(
        dataclasses.replace(layer, measured_time={**layer.measured_time, **{t: per[i] for t, per in times.items()}})
        for i, layer in enumerate(workload.layers)
    )
    return dataclasses.replace(workload, layers=layers)
