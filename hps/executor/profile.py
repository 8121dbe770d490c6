"""`hps profile`: measure each layer's time on each device kind, so the cost models can use
measured numbers instead of the roofline (a workload's measured per-type times).

A layer is timed as the executor runs it: a one-layer stage on the type's whole pool of n devices
(a data-parallel mesh, so the devices contend for the host as a stage's replicas do), its
forward (with vjp residuals) and backward each blocked until ready, on the activation the
preceding layers produce for a micro-batch of `batch` samples (batch / n per device). Each time
is the median of `repeats` runs after WARM_PASSES unmeasured ones, the first of which compiles
(`measured_layer_passes`).

A stage of several layers pays the fixed cost of its calls (dispatching its forward, backward
and gradient sum to n devices) once, a layer timed alone pays it in full: so the cheapest
adjacent pairs are timed as two-layer stages too, the fixed cost c is what a pair saves against
its two layers alone (`call_cost`), and each layer's measured time is its time alone less c.
A stage's time per micro-batch is then Σ of its layers' times + c; c is written per type as
the workload's `measured_call_s`. Moving each layer's input activation onto the pool, and its
gradient, is timed too (`moves`), so a stage's boundary term can be what the executor's moves
cost on these devices rather than the catalogue's network figures.

Per sample (the schedule model's t(l, t)): (forward + backward) / (batch / n), so
compute = (B/k)·Σ t + M·c matches a stage of k = n replicas run in M micro-batches of `batch`.
A fixed cost inside a layer (a dense gradient of an embedding table) is spread over the samples
of the profiled micro-batch, so profile at the micro-batch the plan will run.

For the parallel-plan model (`ParallelProblem.layer_times`) the same runs give each layer's
forward and backward seconds per micro-batch on one device at m = batch / n samples per device,
written as `MeasuredTime(type, 1, m, forward_s, backward_s)` (`[[layer.measured]]`); with
tensor = t > 1 the pool runs as n / t replicas of t-way groups, each layer split as the executor
splits it, and the entry is `MeasuredTime(type, t, batch / (n / t), ...)`:
forward_s is the jitted `jax.vjp` forward that keeps the residuals (layer 0: with the move of its
input from the host, the io term), backward_s the pullback on those stored residuals and a ready
cotangent (no forward recomputation; the input's gradient too, except for layer 0) and the sum of
its parameter gradients into the running totals, as the executor's backward pass does: it runs on
all but the first of an iteration's M micro-batches, so (M − 1)/M of it is counted (M the
micro-batches of an iteration at the profiled size; it matters where a layer's parameters
outweigh its work, e.g. an embedding table).
The pool's n devices run in parallel, so the wall time of a call is one device's time for its m
samples.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from hps.config.types import MeasuredTime, Workload
from hps.executor.measure import WARM_PASSES
from hps.executor.pipeline import compile_pipeline
from hps.executor.stages import build_stage, split_float
from hps.executor.tensor import TENSOR_AXIS
from hps.models.base import LayeredModel, check_sample_batch


def layer_inputs(model: LayeredModel, batch: dict) -> list:
    """The activation entering each layer (the batch for layer 0), computed on the host device."""
    inputs, x = [], batch
    for layer in model.layers:
        inputs.append(x)
        x = layer(x)
    return inputs


CALL_PAIRS = 3
"""Adjacent layer pairs timed on each pool to find a stage's fixed call cost: the cheapest pairs,
whose timing noise is smallest in seconds."""


@dataclasses.dataclass(frozen=True)
class LayerProfile:
    """One type's measurements, a value per layer, each the layer's share inside a stage (its
    time alone less the stage's fixed call cost): `per_sample` seconds of forward + backward per
    sample on the pool; `forward_s` and `backward_s` seconds per micro-batch of `micro_batch`
    samples per replica on one device of a `tp`-way tensor-parallel group. `call_forward_s`,
    `call_backward_s`: the fixed cost a stage pays once per micro-batch, seconds (`call_cost`)."""

    micro_batch: int
    per_sample: list[float]
    forward_s: list[float]
    backward_s: list[float]
    call_forward_s: float = 0.0
    call_backward_s: float = 0.0
    tp: int = 1
    input_move_s: list | None = None
    """Per layer, seconds to move its input activation onto the pool (None for layer 0, whose
    input read is part of its forward); `gradient_move_s` the same for the input's floating
    entries (the gradient a stage ending before the layer receives). `moves`."""
    gradient_move_s: list | None = None

    @property
    def call_s(self) -> float:
        """Seconds per micro-batch a stage spends on its calls whatever its layers."""
        return self.call_forward_s + self.call_backward_s

    def measured(self, type_name: str, index: int) -> MeasuredTime:
        """Layer `index`'s entry for the parallel-plan model."""
        moved = self.input_move_s is not None and index > 0
        return MeasuredTime(
            type_name,
            self.tp,
            self.micro_batch,
            self.forward_s[index],
            self.backward_s[index],
            self.input_move_s[index] if moved else None,
            self.gradient_move_s[index] if moved else None,
        )


def measurements_per_pool(n_layers: int) -> int:
    """How many spans `profile_passes` times on each pool: every layer, then CALL_PAIRS pairs."""
    return n_layers + min(CALL_PAIRS, n_layers - 1)


def call_cost(alone: list[tuple[float, float]], pairs: dict[int, tuple[float, float]]) -> tuple[float, float]:
    """(forward, backward) seconds a stage pays once per micro-batch whatever its layers.

    alone[i]: (forward, backward) seconds of layer i timed as a one-layer stage; pairs[i]: the same
    of layers i and i + 1 as one stage. Each pair gives alone[i] + alone[i+1] − pair, the cost the
    fused pair pays once instead of twice; the median over pairs is kept, at least 0 and at most
    0.9 of the cheapest layer's own time (so every layer keeps a positive share). No pairs: 0."""
    if not pairs:
        return 0.0, 0.0
    cost = []
    for part in (0, 1):
        saved = [alone[i][part] + alone[i + 1][part] - pair[part] for i, pair in pairs.items()]
        cap = 0.9 * min(a[part] for a in alone)
        cost.append(float(min(max(np.median(saved), 0.0), cap)))
    return cost[0], cost[1]


def profile_passes(
    model: LayeredModel,
    pools: dict[str, list],
    batch: int,
    *,
    repeats: int = 3,
    seed: int = 0,
    progress=None,
    tensor: int = 1,
    micro_batches: int = 1,
) -> dict[str, LayerProfile]:
    """{type name: LayerProfile} measured on each type's device pool of n devices, as n / tensor
    data-parallel replicas of `tensor`-way tensor-parallel groups (the executor's layer roles,
    `hps.executor.tensor`); batch must divide by every pool's n / tensor.

    Every layer is timed alone, then the CALL_PAIRS cheapest adjacent pairs as two-layer stages,
    which give the stage's fixed call cost (`call_cost`); each layer's share is its time alone
    less that cost. micro_batches: M, the micro-batches of an iteration at this size; the
    executor sums a micro-batch's gradients into the stage's totals on all but the first of
    them, so the backward counts (M − 1)/M of that sum. progress: optional callable(type name,
    first layer, last layer), called before each measurement (`measurements_per_pool` of them a
    pool).
    """
    summed = (micro_batches - 1) / micro_batches
    optimizer = optax.sgd(0.0)
    check_sample_batch(model, batch, "profiling")
    inputs = layer_inputs(model, model.sample_batch(jax.random.key(seed), batch))
    profiles: dict[str, LayerProfile] = {}
    for name, devices in pools.items():
        replicas = len(devices) // tensor
        grid = np.array(devices).reshape(replicas, tensor)
        mesh = Mesh(grid, ("d0", TENSOR_AXIS)) if tensor > 1 else Mesh(grid[:, 0], ("d0",))
        per_device = batch // replicas

        def timed(first: int, last: int, name=name, mesh=mesh) -> tuple[float, float]:
            if progress:
                progress(name, first, last)
            return span_passes(model, name, mesh, first, last, inputs[first], repeats, optimizer, summed)

        alone = [timed(i, i) for i in range(len(inputs))]
        cheapest = sorted(range(len(inputs) - 1), key=lambda i: sum(alone[i]) + sum(alone[i + 1]))
        pairs = {i: timed(i, i + 1) for i in sorted(cheapest[:CALL_PAIRS])}
        call_forward, call_backward = call_cost(alone, pairs)
        forward = [f - call_forward for f, _ in alone]
        backward = [b - call_backward for _, b in alone]
        per_sample = [(f + b) / per_device for f, b in zip(forward, backward)]
        inward, gradient = moves(mesh, inputs, repeats)
        profiles[name] = LayerProfile(
            per_device, per_sample, forward, backward, call_forward, call_backward, tensor, inward, gradient
        )
    return profiles


def moves(mesh: Mesh, inputs: list, repeats: int) -> tuple[list, list]:
    """([seconds to move layer i's input activation onto `mesh`], [the same for its floating
    entries]), None for layer 0: each placed batch-sharded on the same devices in rotated order
    (every shard on another device, as it comes from another stage) and moved to the mesh's batch
    sharding as the executor moves an activation between stages, blocked until ready; the median
    of `repeats` after WARM_PASSES unmeasured moves."""
    devices = list(mesh.devices.flat)
    rotated = Mesh(np.array(devices[1:] + devices[:1]).reshape(mesh.devices.shape), mesh.axis_names)
    target, source = NamedSharding(mesh, P("d0")), NamedSharding(rotated, P("d0"))

    def seconds(x) -> float:
        placed = jax.block_until_ready(jax.device_put(x, source))
        for _ in range(WARM_PASSES):
            jax.block_until_ready(jax.device_put(placed, target))
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            jax.block_until_ready(jax.device_put(placed, target))
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    inward = [None] + [seconds(x) for x in inputs[1:]]
    gradient = [None] + [seconds(split_float(x)[0]) for x in inputs[1:]]
    return inward, gradient


def span_passes(model, type_name, mesh, first, last, x, repeats, optimizer, summed=1.0) -> tuple[float, float]:
    """(forward, backward) seconds of layers first..last as one stage on `mesh`, on activation x,
    the backward counting `summed` of the gradient sum (`measured_layer_passes`)."""
    stage = build_stage(0, type_name, first, last, model, mesh, ("d0",), np.zeros((1, 1), np.int32), optimizer)
    piece = compile_pipeline([stage], optimizer)[0]
    ((forward, pullback, summing),) = measured_layer_passes(piece, [x], repeats, first == 0)
    return forward, pullback + summed * summing


def measured_layer_passes(piece, batches: list, repeats: int, reads_input: bool) -> list[tuple[float, float, float]]:
    """(forward, pullback, sum) seconds of a stage on each activation in `batches`, timed as the
    executor's measurement pass times a stage (`hps.executor.measure`): each piece blocked until
    ready, the first layer's move of its input from the host included in the forward (the io
    term); the pullback on the stored residuals; the sum of its parameter gradients into the
    micro-batch totals (the executor's backward pass adds each micro-batch's gradients but the
    first's to the stage's running sums, a pass over all of the stage's parameters). Making the cotangent is
    not timed (the executor receives it from the next stage). Each is the median of `repeats`
    rounds after WARM_PASSES unmeasured ones (the first compiles); the batches are timed in turn
    within each round, so drift on a shared machine hits them alike."""
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
        return forward, pullback, time.perf_counter() - summing

    placed = [jax.device_put(x, stage.batch_sharding) for x in batches]
    for _ in range(WARM_PASSES):
        for x, p in zip(batches, placed):
            one_call(x, p)
    rounds = [[one_call(x, p) for x, p in zip(batches, placed)] for _ in range(repeats)]
    medians = np.median(np.asarray(rounds), axis=0)  # (batches, 3)
    return [(float(f), float(p), float(s)) for f, p, s in medians]


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
    and backward per micro-batch at the profile's tp), and its stage call cost per type
    (measured_call_s), updated by `profiles` (per-sample times and call costs from tp-1 profiles
    only); other types, degrees and micro-batches kept."""
    plain = {t: p for t, p in profiles.items() if p.tp == 1}  # the schedule model's times: whole devices
    workload = with_measured_times(workload, {t: p.per_sample for t, p in plain.items()})
    call = {**workload.measured_call_s, **{t: p.call_s for t, p in plain.items()}}
    workload = dataclasses.replace(workload, measured_call_s=call)
    layers = tuple(
        dataclasses.replace(
            layer, measured=merged_measured(layer.measured, [p.measured(t, i) for t, p in profiles.items()])
        )
        for i, layer in enumerate(workload.layers)
    )
    return dataclasses.replace(workload, layers=layers)
