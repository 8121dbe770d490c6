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

For the parallel-plan model (`ParallelProblem.layer_times`) the same runs also give each layer's
forward and backward seconds per micro-batch on one device (tp = 1) at m = batch / n samples per
device, written as `MeasuredTime(type, 1, m, forward_s, backward_s)` (`[[layer.measured]]`):
forward_s is the jitted `jax.vjp` forward that keeps the residuals (layer 0: with the move of its
input from the host, the io term), backward_s the pullback on those stored residuals and a ready
cotangent (no forward recomputation; the input's gradient too, except for layer 0) and the sum of
its parameter gradients into the running totals, as the executor's backward pass does (counted on
every micro-batch: it runs on all but the first of an iteration's, so it is over-counted by one
in M, which matters only where a layer's parameters outweigh its work, e.g. an embedding table). The
pool's n devices run in parallel, so the wall time of a call is one device's time for its m
samples. Each is the median of its own `repeats` values, compile excluded.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh

from hps.config.types import MeasuredTime, Workload
from hps.executor.pipeline import compile_pipeline
from hps.executor.stages import build_stage, split_float
from hps.models.base import LayeredModel, check_sample_batch


def layer_inputs(model: LayeredModel, batch: dict) -> list:
    """The activation entering each layer (the batch for layer 0), computed on the host device."""
    inputs, x = [], batch
    for layer in model.layers:
        inputs.append(x)
        x = layer(x)
    return inputs


@dataclasses.dataclass(frozen=True)
class LayerProfile:
    """One type's measurements, a value per layer: `per_sample` seconds of forward + backward per
    sample on the pool; `forward_s` and `backward_s` seconds per micro-batch of `micro_batch`
    samples on one device (tp = 1)."""

    micro_batch: int
    per_sample: list[float]
    forward_s: list[float]
    backward_s: list[float]

    def measured(self, type_name: str, index: int) -> MeasuredTime:
        """Layer `index`'s entry for the parallel-plan model."""
        return MeasuredTime(type_name, 1, self.micro_batch, self.forward_s[index], self.backward_s[index])


def profile_passes(
    model: LayeredModel, pools: dict[str, list], batch: int, *, repeats: int = 3, seed: int = 0, progress=None
) -> dict[str, LayerProfile]:
    """{type name: LayerProfile} measured on each type's device pool; batch must divide by
    every pool's size.

    progress: optional callable(type name, layer index), called before each measurement.
    """
    optimizer = optax.sgd(0.0)
    check_sample_batch(model, batch, "profiling")
    inputs = layer_inputs(model, model.sample_batch(jax.random.key(seed), batch))
    profiles: dict[str, LayerProfile] = {}
    for name, devices in pools.items():
        mesh = Mesh(np.array(devices), ("d0",))
        per_device = batch // len(devices)
        per_sample, forward, backward = [], [], []
        for index, x in enumerate(inputs):
            if progress:
                progress(name, index)
            stage = build_stage(0, name, index, index, model, mesh, ("d0",), np.zeros((1, 1), np.int32), optimizer)
            piece = compile_pipeline([stage], optimizer)[0]
            ((total, fwd, bwd),) = measured_layer_passes(piece, [x], repeats, index == 0)
            per_sample.append(total / per_device)
            forward.append(fwd)
            backward.append(bwd)
        profiles[name] = LayerProfile(per_device, per_sample, forward, backward)
    return profiles


def profile_layers(
    model: LayeredModel, pools: dict[str, list], batch: int, *, repeats: int = 3, seed: int = 0, progress=None
) -> dict[str, list[float]]:
    """{type name: [seconds per sample of each layer]} measured on each type's device pool
    (`profile_passes`' per_sample)."""
    profiles = profile_passes(model, pools, batch, repeats=repeats, seed=seed, progress=progress)
    return {name: p.per_sample for name, p in profiles.items()}


def measured_layer_passes(piece, batches: list, repeats: int, reads_input: bool) -> list[tuple[float, float, float]]:
    """(total, forward, backward) seconds of a one-layer stage on each activation in `batches`,
    timed as the executor's measurement pass times a stage (`hps.executor.measure`): each piece
    blocked until ready, the first layer's move of its input from the host included in the
    forward (the io term). total = forward + making the cotangent + backward; backward is the
    pullback on the stored residuals and the sum of its parameter gradients into the micro-batch
    totals (the executor's backward pass adds each micro-batch's gradients to the stage's running
    sums, a pass over all of the layer's parameters). Each is the median of `repeats` rounds after a
    compiling one; the batches are timed in turn within each round, so drift on a shared machine
    hits them alike."""
    stage = piece.stage

    def one_call(x, placed) -> tuple[float, float, float]:
        start = time.perf_counter()
        inputs = jax.block_until_ready(jax.device_put(x, stage.batch_sharding)) if reads_input else placed
        x_float, x_other = split_float(inputs)
        y, _, residuals = jax.block_until_ready(piece.forward(stage.params, x_float, x_other))
        forward = time.perf_counter() - start
        seed = jax.block_until_ready(jax.tree.map(lambda v: jnp.full_like(v, 1.0 / v.shape[0]), y))
        middle = time.perf_counter()
        grads, _ = jax.block_until_ready(piece.backward(residuals, seed))
        pullback = time.perf_counter() - middle
        total = jax.block_until_ready(jax.tree.map(jnp.copy, grads))  # donated by accumulate
        summing = time.perf_counter()
        jax.block_until_ready(piece.accumulate(total, grads))
        backward = pullback + time.perf_counter() - summing
        return backward + (middle - start), forward, backward

    placed = [jax.device_put(x, stage.batch_sharding) for x in batches]
    for x, p in zip(batches, placed):
        one_call(x, p)
    rounds = [[one_call(x, p) for x, p in zip(batches, placed)] for _ in range(repeats)]
    medians = np.median(np.asarray(rounds), axis=0)  # (batches, 3)
    return [tuple(float(v) for v in row) for row in medians]


def measured_layer_seconds(piece, batches: list, repeats: int, reads_input: bool) -> list[float]:
    """Seconds of one forward + backward of a one-layer stage on each activation in `batches`
    (`measured_layer_passes`' total)."""
    return [total for total, _, _ in measured_layer_passes(piece, batches, repeats, reads_input)]


def with_measured_times(workload: Workload, times: dict[str, list[float]]) -> Workload:
    """The workload with each layer's measured_time updated by `times` (other types kept)."""
    layers = tuple(
        dataclasses.replace(layer, measured_time={**layer.measured_time, **{t: per[i] for t, per in times.items()}})
        for i, layer in enumerate(workload.layers)
    )
    return dataclasses.replace(workload, layers=layers)


def merged_measured(old: tuple[MeasuredTime, ...], new: list[MeasuredTime]) -> tuple[MeasuredTime, ...]:
    """`old` with each entry of `new` in place of the one for its (type, tp, micro_batch), or
    after them where there is none."""
    key = lambda e: (e.type, e.tp, e.micro_batch)  # noqa: E731
    fresh = {key(e): e for e in new}
    kept = [fresh.pop(key(e), e) for e in old]
    return (*kept, *fresh.values())


def with_profiles(workload: Workload, profiles: dict[str, LayerProfile]) -> Workload:
    """The workload with each layer's measured_time (per sample) and measured entries (forward
    and backward per micro-batch, tp 1) updated by `profiles`; other types and micro-batches kept."""
    workload = with_measured_times(workload, {t: p.per_sample for t, p in profiles.items()})
    layers = tuple(
        dataclasses.replace(
            layer, measured=merged_measured(layer.measured, [p.measured(t, i) for t, p in profiles.items()])
        )
        for i, layer in enumerate(workload.layers)
    )
    return dataclasses.replace(workload, layers=layers)
