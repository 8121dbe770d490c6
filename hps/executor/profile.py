"""`hps profile`: measure each layer's time per sample on each device kind, so the cost model
can use measured numbers instead of the roofline (SPEC "Workload": measured per-type times).

A layer is timed exactly as the executor runs it: a one-layer stage on the type's whole pool of n
devices (a data-parallel mesh, so the devices contend for the host as a stage's replicas do),
its forward (with vjp residuals) and backward each blocked until ready, on the activation the
preceding layers produce for a micro-batch of `batch` samples (batch / n per device). Time per
sample = (forward + backward seconds) / (batch / n): the placement model's per-replica t(l, t),
so compute = (B/k)·Σ t matches a stage of k = n replicas. The median of `repeats` measurements
after a compiling pass.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import optax
from jax.sharding import Mesh

from hps.config.types import Workload
from hps.executor.measure import median_stage_terms
from hps.executor.pipeline import compile_pipeline
from hps.executor.stages import build_stage
from hps.models.base import LayeredModel


def layer_inputs(model: LayeredModel, batch: dict) -> list:
    """The activation entering each layer (the batch for layer 0), computed on the host device."""
    inputs, x = [], batch
    for layer in model.layers:
        inputs.append(x)
        x = layer(x)
    return inputs


def profile_layers(model: LayeredModel, pools: dict[str, list], batch: int, *, repeats: int = 3, seed: int = 0, progress=None) -> dict[str, list[float]]:
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
            terms = median_stage_terms(compile_pipeline([stage], optimizer), x, 1, repeats)
            per_layer.append(terms[0].compute / per_device)
        times[name] = per_layer
    return times


def with_measured_times(workload: Workload, times: dict[str, list[float]]) -> Workload:
    """The workload with each layer's measured_time updated by `times` (other types kept)."""
    layers = tuple(
        dataclasses.replace(layer, measured_time={**layer.measured_time, **{t: per[i] for t, per in times.items()}})
        for i, layer in enumerate(workload.layers)
    )
    return dataclasses.replace(workload, layers=layers)
