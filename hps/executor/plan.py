"""Execute a placement plan for real (docs/executor.md): build the stages, train, measure, compare.

`execute_plan` takes a Flax model, the problem that planned it (workload, catalogue, job, clock)
and a `Plan`, and returns the `hps execute` report: per stage the measured time (compute +
transfer + sync, seconds per iteration) beside the plan model's prediction for the stages as they
ran, the measured and predicted throughput (samples/s), and with `check` whether the parameters
equal plain single-device training of the same model on the same batches.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import jax
import numpy as np
import optax

from hps.config.types import Catalog, Job, Workload
from hps.contract.types import Plan
from hps.errors import ConfigError, TrainingDiverged
from hps.executor.allreduce import planned_orders
from hps.executor.devices import assign_stage_devices, device_pools
from hps.executor.fit import check_fits, stage_need
from hps.executor.measure import StageTimes, median_stage_terms
from hps.executor.mesh import stage_mesh as make_stage_mesh
from hps.executor.mesh import used_dimensions
from hps.executor.pipeline import compile_pipeline, train_step
from hps.executor.predict import activation_bytes, executed_score, stage_predictions
from hps.executor.reference import CHECK_PRECISION, parameter_differences, single_device_training
from hps.executor.stages import layout_stage, place_stage
from hps.executor.tensor import is_table
from hps.executor.transfer import per_process, to_host
from hps.methods.problem import Problem
from hps.models.base import LayeredModel, check_sample_batch
from hps.report.tables import finite

EQUIVALENT_REL_DIFF = 1e-5
"""Largest relative difference per parameter array (max|got − want| / max|want|) `--check`
calls equal."""


@dataclass(frozen=True)
class ExecuteOptions:
    """steps: training steps; micro_batches: per step (default: one per stage, at least 2);
    policy: collective policy (default: the job's); learning_rate: of plain SGD (default: the
    model's own, `LayeredModel.learning_rate`); seed: of data;
    replicas: per-stage data-parallel replica counts d to run instead of the plan's (each
    within its pool); tensor: per-stage tensor-parallel degrees t (default 1 each): a stage
    runs on d·t devices.
    learned_orders: (network, bytes, chunks) -> orders of a trained collective policy, for
    policy "learned" (see `planned_orders`)."""

    steps: int = 5
    micro_batches: int | None = None
    policy: str | None = None
    learned_orders: Callable | None = None
    devices: str | None = None
    learning_rate: float | None = None
    seed: int = 0
    check: bool = False
    replicas: tuple[int, ...] | None = None
    tensor: tuple[int, ...] | None = None


def runnable_replicas(planned: int, pool: int, network) -> int:
    """The largest k ≤ min(planned, pool) whose units fill whole network dimensions."""
    for k in range(min(planned, pool), 0, -1):
        try:
            used_dimensions(network, k)
            return k
        except ConfigError:
            continue
    return 1


def forced_replicas(replicas, names: list[str], pools: dict, networks: list) -> list[int]:
    """Per-stage replica counts given by the user, checked against the stages, their pools and
    their networks (k must fill whole dimensions)."""
    if len(replicas) != len(names):
        raise ConfigError("replicas", "", f"the plan has {len(names)} stages, got {len(replicas)} counts")
    for k, name in zip(replicas, names):
        if not 1 <= k <= len(pools[name]):
            raise ConfigError("replicas", name, f"needs 1 <= k <= {len(pools[name])} (its pool), got {k}")
    for k, network in zip(replicas, networks):
        used_dimensions(network, k)
    return list(replicas)


def stage_tensor(tensor, names: list[str], pools: dict) -> list[int]:
    """Per-stage tensor-parallel degrees (default 1 each), checked against the stages and pools."""
    if tensor is None:
        return [1] * len(names)
    if len(tensor) != len(names):
        raise ConfigError("tensor", "", f"the plan has {len(names)} stages, got {len(tensor)} degrees")
    for t, name in zip(tensor, names):
        if not 1 <= t <= len(pools[name]):
            raise ConfigError("tensor", name, f"needs 1 <= t <= {len(pools[name])} (its pool), got {t}")
    return list(tensor)


def synced_bytes(stage) -> float:
    """W: bytes of one device's share of the stage's gradients its All-Reduce sums (every dense
    parameter; not a row-sharded table, whose gradient stays on its device)."""
    total = 0.0
    for role, state, specs in zip(stage.roles, stage.params, stage.specs()):
        tables = is_table(role, state)
        for leaf, table, spec in zip(jax.tree.leaves(state), jax.tree.leaves(tables), jax.tree.leaves(specs)):
            if not table:
                split = stage.tensor if any(spec) else 1
                total += leaf.size * leaf.dtype.itemsize / split
    return total


def micro_batch_count(batch: int, replicas: list[int], wanted: int) -> int:
    """The largest M ≤ wanted with batch / M a whole multiple of every stage's replica count."""
    step = math.lcm(*replicas)
    for m in range(wanted, 0, -1):
        if batch % m == 0 and (batch // m) % step == 0:
            return m
    raise ConfigError(
        "batch", "", f"{batch} samples do not split evenly over {step} replicas; use a multiple of {step}"
    )


def check_plan_fits(plan: Plan, pools: dict) -> None:
    """ConfigError naming the plan's stage field when a stage needs more devices (tp·dp) than
    its type's pool on this machine holds, or the stages on one pool (each on its own devices)
    more than it holds together."""
    hint = "give --devices, run it where it fits, or --shrink to run its structure on a narrower model"
    on_pool: dict[tuple, list[int]] = {}
    for j, stage in enumerate(plan.stages):
        have = len(pools[stage.type])
        if stage.tp * stage.dp > have:
            raise ConfigError(
                "plan",
                f"stages[{j}].dp",
                f"the stage runs tp {stage.tp} x dp {stage.dp} = {stage.tp * stage.dp} devices of {stage.type}, "
                f"but this machine's pool of {stage.type} has {have} ({hint})",
            )
        on_pool.setdefault(tuple(id(device) for device in pools[stage.type]), []).append(j)
    for pool, js in on_pool.items():
        need = sum(plan.stages[j].tp * plan.stages[j].dp for j in js)
        if need > len(pool):
            types = "/".join(dict.fromkeys(plan.stages[j].type for j in js))
            raise ConfigError(
                "plan",
                "stages",
                f"its {len(js)} stages on {types} run {need} devices in all, each stage on its own, but this "
                f"machine has {len(pool)} for them ({hint})",
            )


def executed_degrees(problem: Problem, plan: Plan, pools: dict, options: ExecuteOptions) -> tuple[list[int], list[int]]:
    """(d, t) per stage as they run: t the plan's tp (or `options.tensor`); d the plan's dp
    exactly in the parallel-plan model (or `options.replicas`), else the largest count within the
    replicas the schedule model provisioned and the pool that fills whole network dimensions."""
    names = [stage.type for stage in plan.stages]
    networks = [problem.catalog.resources[problem.catalog.index(n)].network for n in names]
    if options.tensor is None and options.replicas is None and problem.parallel:
        check_plan_fits(plan, pools)
    tensor = stage_tensor(options.tensor or [stage.tp for stage in plan.stages], names, pools)
    forced = options.replicas
    if forced is None and problem.parallel:
        forced = [stage.dp for stage in plan.stages]
    if forced is not None:
        groups = {n: pools[n][: len(pools[n]) // t] for n, t in zip(names, tensor)}  # d counts groups of t
        return forced_replicas(forced, names, groups, networks), tensor
    ks = [
        runnable_replicas(max(1, stage.dp // t), len(pools[n]) // t, net)
        for stage, n, net, t in zip(plan.stages, names, networks, tensor)
    ]
    return ks, tensor


def execute_plan(model: LayeredModel, problem: Problem, plan: Plan, options: ExecuteOptions) -> dict:
    """Run `options.steps` training steps of `plan` (each stage on its own devices, whatever
    the types of its neighbours) and return the `hps execute` report."""
    workload, catalog, job = problem.workload, problem.catalog, problem.job
    if len(model.layers) != len(workload.layers):
        raise ConfigError(
            "workload", workload.name, f"the model has {len(model.layers)} layers, the table {len(workload.layers)}"
        )
    names = [stage.type for stage in plan.stages]
    pools = device_pools(catalog, names, options.devices)
    ks, tensor = executed_degrees(problem, plan, pools, options)
    batch = int(job.batch)
    wanted = options.micro_batches
    if wanted is None and plan.micro_batch is not None:
        wanted = batch // int(plan.micro_batch)
    micro = micro_batch_count(batch, ks, wanted or max(2, len(plan.stages)))
    if wanted is not None and micro != wanted:
        raise ConfigError(
            "micro_batches",
            "",
            f"{wanted} micro-batches do not split the batch of {batch} samples into whole "
            f"samples for every stage's replicas ({', '.join(map(str, ks))}); the most that do is {micro}",
        )
    learning_rate = model.learning_rate if options.learning_rate is None else options.learning_rate
    optimizer = optax.sgd(learning_rate)
    policy = options.policy or job.collective

    check_sample_batch(model, batch, "executing the plan", copies=options.steps)  # before sizing its memory
    spans = [(stage.first, stage.last, catalog.index(stage.type)) for stage in plan.stages]
    executed = tuple(
        dataclasses.replace(stage, tp=t, dp=k) for stage, k, t in zip(plan.stages, ks, tensor)
    )  # fmt: skip
    activations = activation_bytes(problem, executed, micro)
    devices = assign_stage_devices(names, [k * t for k, t in zip(ks, tensor)], pools)
    stages, synced = laid_out_stages(
        model, catalog, spans, devices, ks, tensor, optimizer, policy, job, options, activations
    )
    stages = [place_stage(stage, optimizer) for stage in stages]
    pipeline = compile_pipeline(stages, optimizer)

    batches = [  # on the host: each process places its own devices' slices of the same samples
        jax.tree.map(np.asarray, model.sample_batch(jax.random.key(options.seed + step), batch))
        for step in range(options.steps)
    ]
    precision = CHECK_PRECISION if options.check else None
    with jax.default_matmul_precision(precision):
        terms = owners_terms(median_stage_terms(pipeline, batches[0], micro, repeats=7), stages)
        losses, step_seconds = train_steps(pipeline, batches, micro)
    step_time = float(np.median(step_seconds[1:] if len(step_seconds) > 1 else step_seconds))

    score = executed_score(problem, executed, micro)
    predicted = stage_predictions(score)
    report = {
        "workload": workload.name,
        "schedule": [stage.type for stage in plan.stages for _ in range(stage.first, stage.last + 1)],
        "batch": batch,
        "micro_batches": micro,
        "collective_policy": policy,
        "learning_rate": learning_rate,
        "clock": problem.clock.name,
        "stages": [
            _stage_row(stage, span, planned.dp, measured, prediction, w)
            for stage, span, planned, measured, prediction, w in zip(
                stages, spans, plan.stages, terms, predicted, synced
            )
        ],
        "measured_step_time": step_time,
        "measured_throughput": batch / step_time,
        "predicted_step_time": finite(score.iteration_s),
        "predicted_throughput": finite(score.throughput),
        "losses": losses,
        "matmul_precision": precision or "default",
        "equivalent": None,
        "max_param_rel_diff": None,
    }
    if options.check:
        with jax.default_matmul_precision(CHECK_PRECISION):
            report.update(check_against_reference(model, stages, batches, optimizer, losses))
    return report


def execute_schedule(
    model: LayeredModel, workload: Workload, catalog: Catalog, job: Job, schedule: list[int], options: ExecuteOptions
) -> dict:
    """`execute_plan` of a schedule (type index per layer): its maximal runs, each with the
    replicas the schedule model provisions."""
    from hps.costmodel.schedule.plan import provisioned, schedule_plan

    problem = Problem(workload, catalog, job, model="schedule")
    return execute_plan(model, problem, provisioned(problem.instance, schedule_plan(schedule)), options)


def laid_out_stages(model, catalog, spans, devices, ks, tensor, optimizer, policy, job, options, activations):
    """(stages laid out on their meshes, not yet placed; W synced bytes per stage): each stage's
    mesh of d·t devices, its memory (its share of the parameters, their gradients and optimizer
    state, and `activations`: bytes per device in flight) checked against its type's
    (StageDoesNotFit before any stage is placed), its All-Reduce orders planned for W over its d
    replicas."""
    stages, synced = [], []
    for index, ((first, last, t), group) in enumerate(zip(spans, devices)):
        name, net = catalog.names[t], catalog.resources[t].network
        mesh = make_stage_mesh(group, net, tensor=tensor[index])
        stage = layout_stage(index, name, first, last, model, mesh.mesh, mesh.axis_names, np.zeros((1, 1)))
        need = stage_need(stage.params, stage.specs(), stage.mesh, optimizer)
        where = f"stage {index} ({name}, layers {first}-{last})"
        check_fits(where, name, need, catalog.resources[t].memory, activations[index])
        w = synced_bytes(stage)
        stage.orders = planned_orders(
            policy, net, ks[index], max(w, 1.0), job.chunks, learned_orders=options.learned_orders
        )
        stages.append(stage)
        synced.append(w)
    return stages, synced


def train_steps(pipeline, batches, micro: int) -> tuple[list[float], list[float]]:
    """(mean loss, wall seconds) of each training step, one per batch; TrainingDiverged at the
    first non-finite loss."""
    losses, seconds = [], []
    for step, b in enumerate(batches):
        start = time.perf_counter()
        losses.append(float(to_host(train_step(pipeline, b, micro))))
        seconds.append(time.perf_counter() - start)
        if not math.isfinite(losses[-1]):
            raise TrainingDiverged(f"diverged at step {step}: the loss is {losses[-1]}; lower --lr")
    return losses, seconds


def owners_terms(terms: list[StageTimes], stages) -> list[StageTimes]:
    """Each stage's measured terms as the process holding its first device measured them (the
    same list in every process; `terms` itself where there is one process)."""
    if jax.process_count() == 1:
        return terms
    table = per_process(np.array([[t.compute, t.transfer, t.sync] for t in terms]))
    owners = [stage.mesh.devices.flat[0].process_index for stage in stages]
    return [StageTimes(*map(float, table[owner, s])) for s, owner in enumerate(owners)]


def check_against_reference(model: LayeredModel, stages, batches, optimizer, losses: list[float]) -> dict:
    """The check's report entries: the same model trained on the first stage's first device
    (same backend as the plan; in a process that does not hold it, this process's first device)
    with the same optimizer and batches, compared parameter by parameter. Non-finite parameters
    or losses on either side raise TrainingDiverged (never "equal"). Every process gathers the
    parameters; only process 0 trains the reference and compares (the others return {})."""
    got = [state for stage in stages for state in stage.host_params()]
    if jax.process_index() != 0:
        return {}
    device = stages[0].mesh.devices.flat[0]
    if device.process_index != jax.process_index():
        device = jax.local_devices()[0]
    want, reference_losses = single_device_training(model, batches, optimizer, device=device)
    for what, params in (("the executed plan's", got), ("the single-device reference's", want)):
        if not all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree.leaves(params)):
            raise TrainingDiverged(f"diverged: {what} parameters hold NaN or inf after step {len(batches) - 1}")
    if not all(math.isfinite(loss) for loss in reference_losses):
        step = next(i for i, loss in enumerate(reference_losses) if not math.isfinite(loss))
        raise TrainingDiverged(f"the single-device reference diverged at step {step}; lower --lr")
    differences = parameter_differences(got, want, model.layer_names)
    return {
        "max_param_rel_diff": differences["max_rel_diff"],
        "max_param_abs_diff": differences["max_abs_diff"],
        "worst_parameter": differences["worst_parameter"],
        "max_loss_rel_diff": max(abs(a - b) / abs(b) for a, b in zip(losses, reference_losses)),
        "equivalent": differences["max_rel_diff"] <= EQUIVALENT_REL_DIFF,
        "reference_device": str(device),
    }


def _stage_row(stage, span, planned_replicas, measured, prediction, synced_bytes) -> dict:
    return {
        "type": stage.type_name,
        "first_layer": span[0],
        "last_layer": span[1],
        "replicas": stage.replicas,
        "tensor": stage.tensor,
        "planned_replicas": planned_replicas,
        "mesh": {name: int(size) for name, size in stage.mesh.shape.items()},
        "processes": sorted({int(device.process_index) for device in stage.mesh.devices.flat}),
        "synced_bytes": synced_bytes,
        "measured_time": measured.time,
        "predicted_time": finite(prediction.time),
        "error": measured.time / prediction.time - 1.0 if prediction.time > 0 else None,
        "measured": {"compute": measured.compute, "transfer": measured.transfer, "sync": measured.sync},
        "predicted": {
            "compute": finite(prediction.compute),
            "transfer": finite(prediction.boundary),
            "sync": finite(prediction.sync),
        },
    }
