"""One training iteration of an ASTRA-sim 1.0 workload on a network (docs/themis-paper.md,
"End to end").

The timeline, per layer as ASTRA-sim 1.0's workload layer runs it (compute in cycles of 1 ns,
times compute_scale; collective sizes in bytes, times comm_scale):

- forward, layers in order: the layer's forward compute, then its forward collective, which
  the next layer waits for (blocking);
- backward, layers in reverse: input-gradient compute, its collective (blocking), then
  weight-gradient compute and its collective, issued without waiting (it overlaps the rest of
  back-propagation);
- the iteration ends when the compute has ended and every collective has finished.

HYBRID_DLRM: the embedding's forward All-to-All overlaps the bottom MLP and is waited for before
the first top layer; its input-gradient All-to-All overlaps the bottom MLP's backward.

Every collective issued so far shares the network in one event-driven simulation (kinds.py):
a blocking collective's end is exact from the collectives issued before it, as any collective
issued later is released after it ends. Which dimensions a pass's collective spans follows the
parallelism (`groups`): data-parallel collectives span the data dimensions, model-parallel ones
the model dimensions. Many instances (networks × policies) of one workload run in lockstep,
one vmapped simulation per blocking collective (`iteration_times`); `run_timeline` takes any
simulator, so the plain-Python reference runs the same timeline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from hps.collective.model.kinds import KIND_CODES, chunk_ends
from hps.collective.model.network import network_batch
from hps.collective.model.orders import baseline_orders
from hps.collective.model.themis import collective_orders
from hps.config.types import Network
from hps.errors import ConfigError
from hps.studies.astra_workload import AstraWorkload

CYCLE_SECONDS = 1e-9
"""ASTRA-sim 1.0 counts compute in cycles of 1 ns."""
POLICIES = {"baseline": False, "themis": True}
"""Policy -> SCF: the baseline order with FIFO, Themis's orders with SCF (the paper's pair)."""


@dataclass(frozen=True)
class Collective:
    """One collective of the iteration: layer index, pass ("forward", "input-gradient",
    "weight-gradient"), kind (KIND_CODES name), size (bytes, scaled), the dimensions it spans
    ((D,) bool), and the layer before which it must have ended (None: the iteration's end)."""

    layer: int
    stage: str
    kind: str
    size_bytes: float
    group: tuple[bool, ...]
    wait: str


def split_for_group(network: Network, group: int) -> tuple[Network, int]:
    """(network, m): the network with its leading dimensions covering `group` NPUs, the
    dimension where the group ends split in two (the part inside the group first, both with
    the dimension's bandwidth, latency and algorithm), and m, the number of leading dimensions
    the group spans. ConfigError when `group` is not a product of leading sizes and a divisor."""
    dims, covered = list(network.dimensions), 1
    for i, dim in enumerate(dims):
        if covered == group:
            return network, i
        inner = group // covered
        if group % covered == 0 and dim.size % inner == 0 and inner < dim.size:
            parts = [dataclasses.replace(dim, size=inner), dataclasses.replace(dim, size=dim.size // inner)]
            return Network(network.name, tuple(dims[:i] + parts + dims[i + 1 :])), i + 1
        covered *= dim.size
    if covered == group:
        return network, len(dims)
    sizes = "x".join(str(d.size) for d in dims)
    raise ConfigError(network.name, "model_parallel_NPU_group", f"a group of {group} NPUs does not fit {sizes}")


def groups(workload: AstraWorkload, network: Network, parallelism: str | None = None):
    """(network, model dims (D,) bool, data dims (D,) bool) for `parallelism` (the workload's
    when None): HYBRID_TRANSFORMER's model-parallel group is its leading NPUs (split_for_group),
    data-parallel across the rest; HYBRID_DATA_MODEL is model-parallel on the first dimension
    (within a package) and data-parallel across the others, HYBRID_MODEL_DATA the reverse;
    every other parallelism spans every dimension with both."""
    parallelism = parallelism or workload.parallelism
    n = len(network.dimensions)
    if parallelism == "HYBRID_TRANSFORMER":
        network, m = split_for_group(network, workload.model_parallel_group)
        n = len(network.dimensions)
        model = tuple(i < m for i in range(n))
        return network, model, tuple(not x for x in model)
    if parallelism in ("HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA") and n > 1:
        first = tuple(i == 0 for i in range(n))
        other = tuple(not x for x in first)
        return (network, first, other) if parallelism == "HYBRID_DATA_MODEL" else (network, other, first)
    every = (True,) * n
    return network, every, every


def schedule(workload: AstraWorkload, network: Network, comm_scale: float, compute_scale: float):
    """(network the groups refer to, steps, collectives): steps is the timeline as a list of
    ("compute", seconds), ("issue", collective index) and ("wait", collective index).
    HYBRID_CUSTOMIZED (a parallelism per layer) is refused: no artifact workload uses it and
    this model gives every layer the workload's groups."""
    if workload.parallelism == "HYBRID_CUSTOMIZED":
        raise ConfigError(f"{workload.source}:1", "", "HYBRID_CUSTOMIZED workloads are not supported end to end")
    network, model, data = groups(workload, network)
    dlrm = workload.parallelism == "HYBRID_DLRM"
    steps, collectives, deferred = [], [], []

    def issue(layer, stage, one_pass, group, wait):
        if one_pass.collective == "NONE" or one_pass.size_bytes == 0:
            return None
        kind = "ALLREDUCE" if one_pass.collective == "ALLREDUCEALLTOALL" else one_pass.collective
        collectives.append(Collective(layer, stage, kind, one_pass.size_bytes * comm_scale, group, wait))
        steps.append(("issue", len(collectives) - 1))
        if wait == "now":
            steps.append(("wait", len(collectives) - 1))
        return len(collectives) - 1

    def compute(cycles):
        steps.append(("compute", cycles * compute_scale * CYCLE_SECONDS))

    for i, layer in enumerate(workload.layers):
        if dlrm and i == workload.dlrm_last_bottom_layer + 1:
            steps.extend(("wait", c) for c in deferred)
        compute(layer.forward.compute_cycles)
        late = dlrm and layer.forward.collective == "ALLTOALL"
        index = issue(i, "forward", layer.forward, model, "top" if late else "now")
        if late and index is not None:
            deferred.append(index)
    for i in reversed(range(len(workload.layers))):
        layer = workload.layers[i]
        compute(layer.input_grad.compute_cycles)
        late = dlrm and layer.input_grad.collective == "ALLTOALL"
        issue(i, "input-gradient", layer.input_grad, model, "end" if late else "now")
        compute(layer.weight_grad.compute_cycles)
        issue(i, "weight-gradient", layer.weight_grad, data, "end")
    return network, steps, collectives


def run_timeline(steps, count: int, instances: int, simulate: Callable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(iteration s, critical path end s, communication end s), each (instances,), of instances
    run in lockstep through one schedule's steps. The critical path is the compute and the
    blocking collectives; communication ends with the last collective.

    simulate(issued (K,) bool, release (instances, K) s) -> (instances, K) s, the end of every
    issued collective, all simulated together; count: K, the collectives of the schedule."""
    clock = np.zeros(instances)
    release = np.zeros((instances, count))
    issued = np.zeros(count, bool)
    ended: dict[int, np.ndarray] = {}
    for step, value in steps:
        if step == "compute":
            clock = clock + value
        elif step == "issue":
            release[:, value] = clock
            issued[value] = True
        else:  # wait: simulate what is issued unless this collective's end is known
            if value not in ended:
                ends = simulate(issued.copy(), release.copy())
                ended.update({k: ends[:, k] for k in np.flatnonzero(issued)})
            clock = np.maximum(clock, ended[value])
    comm_end = simulate(issued.copy(), release.copy()).max(axis=1) if issued.any() else np.zeros(instances)
    return np.maximum(clock, comm_end), clock, comm_end


class BatchedSimulation:
    """simulate(issued, release) for run_timeline: every collective of one schedule as chunks
    on N instances (networks × policies, each with its own collectives' groups), one vmapped
    jnp simulation per call, compiled once."""

    def __init__(self, networks: list[Network], policies: list[str], collectives: list[list[Collective]], chunks: int):
        self.chunks, self.count = chunks, len(collectives[0])
        width = max(len(n.dimensions) for n in networks)
        self.nets = network_batch(networks, max_dims=4 if width <= 4 else 6)
        d = self.nets.size.shape[1]
        group = np.zeros((len(networks), self.count, d), bool)
        for i, instance in enumerate(collectives):
            for k, c in enumerate(instance):
                group[i, k, : len(c.group)] = c.group
        sizes = np.asarray([c.size_bytes for c in collectives[0]], np.float32)
        self.scf = jnp.asarray([POLICIES[p] for p in policies])
        self.chunk_bytes = jnp.asarray(np.repeat(sizes / chunks, chunks))
        self.kind = jnp.asarray(np.repeat([KIND_CODES[c.kind] for c in collectives[0]], chunks), jnp.int32)
        self.group = jnp.asarray(np.repeat(group, chunks, axis=1))
        self.orders = _orders(self.nets, jnp.asarray(group), jnp.asarray(sizes), self.scf, chunks)

    def __call__(self, issued: np.ndarray, release: np.ndarray) -> np.ndarray:
        mask = jnp.asarray(np.repeat(issued, self.chunks))
        release = jnp.asarray(np.repeat(release, self.chunks, axis=1), jnp.float32)
        ends = _ends(self.nets, self.chunk_bytes, release, self.orders, mask, self.kind, self.group, self.scf)
        return np.asarray(ends, np.float64).reshape(release.shape[0], self.count, self.chunks).max(axis=2)


@jax.jit
def _ends(nets, chunk_bytes, release, orders, mask, kind, group, scf):
    """(N, K·chunks) s: chunk_ends of every instance."""

    def one(net, r, o, g, s):
        return chunk_ends(net, chunk_bytes, r, o, mask, kind, g, s)

    return jax.vmap(one)(nets, release, orders, group, scf)


@partial(jax.jit, static_argnames="chunks")
def _orders(nets, group, sizes, themis, chunks: int):
    """(N, K·chunks, D) int32 orders: per instance and collective, Themis's (loads from 0, over
    the collective's group) where `themis`, else the baseline order. group (N, K, D) bool,
    sizes (K,) bytes, themis (N,) bool."""

    def one(net, groups_of, use_themis):
        def per_collective(g, size):
            masked = jnp.where(g, net.size, 1)
            ordered = collective_orders(masked, net.bandwidth, size, chunks, True, chunks)[0]
            return jnp.where(use_themis, ordered, baseline_orders(net, chunks))

        return jax.vmap(per_collective)(groups_of, sizes).reshape(-1, net.size.shape[0])

    return jax.vmap(one)(nets, group, themis)


def iteration_times(
    workload: AstraWorkload,
    networks: list[Network],
    *,
    comm_scale: float = 1.0,
    compute_scale: float = 1.0,
    chunks: int = 16,
    policies: tuple[str, ...] = ("baseline", "themis"),
) -> dict[str, np.ndarray]:
    """{"iteration", "critical_path", "communication", "compute"}: (len(networks), len(policies))
    s of one iteration of `workload` on each network under each policy (POLICIES), each
    collective in `chunks` equal chunks (run_timeline; "compute" is the compute alone)."""
    pairs = [(n, p) for n in networks for p in policies]
    scheduled = [schedule(workload, n, comm_scale, compute_scale) for n, _ in pairs]
    steps, count = scheduled[0][1], len(scheduled[0][2])
    simulate = BatchedSimulation([s[0] for s in scheduled], [p for _, p in pairs], [s[2] for s in scheduled], chunks)
    total, critical, comm = run_timeline(steps, count, len(pairs), simulate)
    shape = (len(networks), len(policies))
    compute = sum(value for step, value in steps if step == "compute")
    return {
        "iteration": total.reshape(shape),
        "critical_path": critical.reshape(shape),
        "communication": comm.reshape(shape),
        "compute": np.full(shape, compute),
    }
