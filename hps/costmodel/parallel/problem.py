"""One parallel-plan instance as float64 numpy arrays, built once from the typed configs.

Layer arrays are (L,) per sample; type arrays are (T,); every derived table (layer times per
(type, t, m), All-Reduce coefficients per (type, t)) is made on demand and kept.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from hps.config.plan_space import open_fields
from hps.config.types import DEFAULT_MEMORY_HEADROOM, PRECISIONS, Catalog, Job, Workload, steps_per_phase
from hps.costmodel.clocks.base import Clock
from hps.costmodel.clocks.kernel import KernelClock
from hps.costmodel.parallel.pipeline import bubble_slots, in_flight_chunks
from hps.costmodel.schedule.provisioning import allreduce_coefficients

BUCKET_BYTES = 25 * 2**20
"""Bytes of one gradient bucket of the overlapped data-parallel synchronisation (PyTorch DDP's
default bucket_cap_mb = 25)."""
ZERO3_REDUCE = 0.5
"""ZeRO-3's gradient traffic per iteration in All-Reduces: one Reduce-Scatter, half an
All-Reduce's bytes."""
ZERO3_GATHER = 1.0
"""ZeRO-3's parameter traffic per micro-batch in All-Reduces: the All-Gathers of the forward and
the backward pass, each half an All-Reduce's bytes (a device holds one layer's gathered
parameters at a time, so every micro-batch gathers them again, as FSDP does with
reshard_after_forward)."""
FLOOR_TOLERANCE = 1e-9
"""Relative slack on the throughput floor (a plan at the floor to rounding meets it)."""
FP8_WEIGHT_BYTES = 2.0
"""Bytes per parameter of the FP8 weight copies a stage that computes in FP8 keeps beside its
state (Transformer Engine caches each weight's FP8 copy and its transpose across the
micro-batches of an iteration)."""
FULL_RECOMPUTED = 1.0 / 3.0
"""Fraction of a layer's forward + backward FLOP that full recomputation redoes: its forward pass."""


def _memo(method):
    """functools.cache in the problem's own `memo` dict, which the problems `restricted` and
    `repriced` make share (their layer times are the same), and which goes with them."""
    name = method.__name__

    @functools.wraps(method)
    def cached(self, *args):
        key = (name, *args)
        if key not in self.memo:
            self.memo[key] = method(self, *args)
        return self.memo[key]

    return cached


def measured_moves(layers, type_name: str, tp: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """((L,) seconds to move each layer's input onto a tp-way group of `type_name` at m samples
    per replica, (L,) the same for its gradient), from the layers' measured entries for exactly
    (type, tp, m); NaN where none was measured."""
    inward, gradient = np.full(len(layers), np.nan), np.full(len(layers), np.nan)
    for i, layer in enumerate(layers):
        for e in layer.measured:
            if (e.type, e.tp, e.micro_batch) == (type_name, tp, m):
                inward[i] = np.nan if e.input_move_s is None else e.input_move_s
                gradient[i] = np.nan if e.gradient_move_s is None else e.gradient_move_s
    return inward, gradient


def divisors(n: int) -> list[int]:
    """The positive divisors of n, ascending."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, ... up to limit."""
    return [1 << i for i in range(max(1, limit).bit_length())]


@dataclasses.dataclass(eq=False)
class ParallelProblem:
    """A workload on a catalogue under a job, for the parallel-plan model. `job.micro_batch`
    None leaves the micro-batch b to the solver (any divisor of the batch); the job's
    virtual_stages, fp8 and recompute must be fixed (`hps.config.plan_space.variants` expands the
    open ones). `allowed`, a bool (L, T) array, restricts which types may run each layer (None:
    any; under FP8 only types with an FP8 peak); a type sequence is completed exactly by solving
    the problem with one type allowed per layer. `clock` times the layers (`hps.costmodel.clocks`;
    the kernel clock by default)."""

    workload: Workload
    catalog: Catalog
    job: Job
    allowed: np.ndarray | None = None
    clock: Clock = KernelClock()
    """How long a layer takes on a device (`hps.costmodel.clocks.base.clock_named`)."""
    memo: dict = dataclasses.field(default_factory=dict, repr=False)  # derived tables (`_memo`)
    pooled_units: tuple[int, ...] | None = None
    """(T,) units of each type a plan's stages may hold together (the pooled caps, `pooled_caps`;
    None: its max_units, which bounds each stage's t·d either way): merged copies of a type."""

    def __post_init__(self):
        left = open_fields(self.job)
        if left:
            raise ValueError(f"the job leaves {', '.join(left)} open: score one of plan_space.variants(job)")
        self.virtual_stages, self.fp8 = int(self.job.virtual_stages), bool(self.job.fp8)
        layers = self.workload.layers
        arr = lambda f: np.array([f(l) for l in layers], np.float64)  # noqa: E731
        self.flops = arr(lambda l: l.flops)
        self.mem_bytes = arr(lambda l: l.mem_bytes)
        self.serial_bytes = arr(lambda l: l.serial_mem_bytes)
        self.io_bytes = arr(lambda l: l.io_bytes)
        self.act_bytes = arr(lambda l: l.act_bytes)
        self.stash = arr(lambda l: l.stash)
        self.fp8_stash = arr(lambda l: l.fp8_stash)
        self.tp_bytes = arr(lambda l: l.tp_bytes)
        self.tp_collectives = arr(lambda l: l.tp_collectives)
        self.parameters = arr(lambda l: l.parameters)
        self.sparse_bytes = arr(lambda l: l.sparse_param_bytes)
        self.sparse_kind = np.array([l.kind == "sparse" for l in layers])
        self.cut_after = np.array([l.cut_after for l in layers])
        self.measured_pairs = frozenset((e.type, e.tp) for l in layers for e in l.measured)  # (type name, tp)
        self.cut_after[-1] = True
        self.input_act = np.concatenate([[0.0], self.act_bytes[:-1]])
        zero = lambda x: np.concatenate([[0.0], np.cumsum(x)])  # noqa: E731
        self.params_prefix = zero(self.parameters)
        self.sparse_prefix = zero(self.sparse_bytes)
        selective = arr(lambda l: l.selective_stash)
        self.selective_flops = arr(lambda l: l.selective_flops)
        full_stash = self.fp8_stash if self.fp8 else self.stash
        self.kept = {"none": full_stash, "selective": full_stash - (self.stash - selective)}.get(self.job.recompute)
        """(L,) activation bytes per sample each layer keeps for its backward pass (None under
        full recomputation, which keeps each pipeline unit's input)."""
        self.recompute_peak = full_stash
        """(L,) bytes per sample a layer's recomputed forward holds while its backward runs."""
        self.kept_prefix = zero(self.unit_input_act() if self.kept is None else self.kept)
        self.recomputed = self.recomputed_fraction()
        self.serial_recomputed = self.serial_recomputed_fraction()
        self.precision_bytes = PRECISIONS[self.job.precision]
        sites = sorted({r.site for r in self.catalog.resources})
        self.sites = tuple(sites)
        self.type_site = np.array([sites.index(r.site) for r in self.catalog.resources], np.int64)
        self.price = np.array([r.price_per_hour for r in self.catalog.resources], np.float64)
        pooled = self.pooled_units or tuple(r.max_units for r in self.catalog.resources)
        if len(pooled) != self.num_types or any(p < r.max_units for p, r in zip(pooled, self.catalog.resources)):
            raise ValueError("pooled_units must be (types,), each at least its type's max_units")
        self.pooled_caps = np.array(pooled, np.int64)
        call = self.workload.measured_call_s
        self.call_seconds = np.array([call.get(r.name, 0.0) for r in self.catalog.resources], np.float64)
        """(T,) seconds a stage of each type spends on its calls per micro-batch (measured_call_s)."""
        self.model_flops = float(self.flops.sum())
        self.memory_limit = np.array([r.memory * (1 - self.headroom(r)) for r in self.catalog.resources])
        """(T,) bytes a plan may use per device of each type: its memory less the headroom."""
        if self.allowed is not None:
            self.allowed = np.asarray(self.allowed, bool)
            if self.allowed.shape != (self.num_layers, self.num_types):
                raise ValueError(f"allowed must be (layers, types) = {(self.num_layers, self.num_types)}")
        if self.fp8:
            fp8_types = np.array([r.fp8_peak_flops is not None for r in self.catalog.resources])
            given = np.ones((self.num_layers, self.num_types), bool) if self.allowed is None else self.allowed
            self.allowed = given & fp8_types[None, :]

    def span_units(self, first, last) -> np.ndarray:
        """Pipeline units (runs of layers between allowed cuts) in layers first..last, per span."""
        ends = np.concatenate([[0], np.cumsum(self.cut_after)])
        return ends[np.asarray(last) + 1] - ends[np.asarray(first)]

    def splits(self, first, last) -> np.ndarray:
        """Bool per span: its units split into the job's v model chunks (at least v units)."""
        return self.span_units(first, last) >= self.virtual_stages

    def headroom(self, resource) -> float:
        """The fraction of the type's memory a plan leaves free: the job's memory_headroom, else
        the type's, else DEFAULT_MEMORY_HEADROOM."""
        for value in (self.job.memory_headroom, resource.memory_headroom):
            if value is not None:
                return float(value)
        return DEFAULT_MEMORY_HEADROOM

    def unit_input_act(self) -> np.ndarray:
        """(L,) the input activation bytes per sample of each layer that starts a pipeline unit
        (0 elsewhere): what a checkpointed unit keeps under full recomputation."""
        starts_unit = np.concatenate([[True], self.cut_after[:-1]])
        return np.where(starts_unit, self.input_act, 0.0)

    def recomputed_fraction(self) -> np.ndarray:
        """(L,) the fraction of each layer's forward + backward FLOP its recomputation redoes:
        FULL_RECOMPUTED under full recomputation, selective_flops / flops under selective."""
        if self.job.recompute == "full":
            return np.full(self.num_layers, FULL_RECOMPUTED)
        if self.job.recompute == "selective":
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(self.flops > 0, self.selective_flops / self.flops, 0.0)
        return np.zeros(self.num_layers)

    def serial_recomputed_fraction(self) -> np.ndarray:
        """(L,) the fraction of each layer's serial_mem_bytes its recomputation moves again: its
        forward pass's, FULL_RECOMPUTED, under full recomputation, and under selective where the
        layer recomputes anything (selective_flops > 0: the S x S kernels of standard attention are
        the core selective recomputation redoes); 0 otherwise."""
        if self.job.recompute == "full":
            return np.full(self.num_layers, FULL_RECOMPUTED)
        if self.job.recompute == "selective":
            return np.where(self.selective_flops > 0, FULL_RECOMPUTED, 0.0)
        return np.zeros(self.num_layers)

    def bubble_slots_of(self, micro_batches: int, stages):
        """Stage times per iteration of `stages` stages (an int or an array) and `micro_batches`
        under the job's schedule: M + (S − 1)/v."""
        return bubble_slots(stages, micro_batches, self.virtual_stages)

    def in_flight(self, stages: int, micro_batches: int) -> np.ndarray:
        """(S,) micro-batches (possibly fractional: chunks of 1/v) whose activations each stage
        holds at its peak."""
        v = self.virtual_stages
        return in_flight_chunks(np.arange(stages), stages, micro_batches, v) / v

    def restricted(self, allowed: np.ndarray) -> ParallelProblem:
        """The same problem with only `allowed` (L, T) types per layer."""
        return ParallelProblem(self.workload, self.catalog, self.job, allowed, self.clock, self.memo, self.pooled_units)

    def shape(self) -> tuple:
        """What every derived table depends on besides the throughput floor, the budget, the samples
        to train and the types' prices: two problems of equal shape have the same layer times, All-Reduce
        coefficients and stage tables (only the rates differ)."""
        resources = tuple(dataclasses.replace(r, price_per_hour=1.0) for r in self.catalog.resources)
        job = dataclasses.replace(self.job, throughput=1.0, samples=1.0, budget_per_hour=None)
        allowed = None if self.allowed is None else self.allowed.tobytes()
        pooled = tuple(self.pooled_caps.tolist())  # merged copies of a type pool their caps
        return id(self.workload), resources, self.catalog.links, job, self.clock, pooled, allowed

    def repriced(self, catalog: Catalog, job: Job) -> ParallelProblem:
        """This problem under `catalog` and `job`, which may differ from its own only in the types'
        prices, the floor, the budget and the samples (ValueError otherwise), sharing its derived
        tables."""
        out = ParallelProblem(self.workload, catalog, job, self.allowed, self.clock, self.memo, self.pooled_units)
        if out.shape() != self.shape():
            raise ValueError("a repriced problem differs only in prices, floor, budget and samples")
        return out

    def span_allowed(self, first: np.ndarray, last: np.ndarray, types: np.ndarray) -> np.ndarray:
        """(N,) bool: every layer first..last may run on types (all True without a restriction)."""
        if self.allowed is None:
            return np.ones(len(first), bool)
        banned = np.vstack([np.zeros((1, self.num_types), np.int64), np.cumsum(~self.allowed, axis=0)])
        return banned[last + 1, types] == banned[first, types]

    @property
    def num_layers(self) -> int:
        return len(self.workload.layers)

    @property
    def num_types(self) -> int:
        return len(self.catalog.resources)

    def micro_batch_choices(self) -> list[int]:
        """The job's micro-batch, or every divisor of the batch where it leaves b open: nearest
        (in ratio) to batch / micro_batches first where the job names a micro-batch count, else
        ascending (the order only decides which a time limit leaves unsearched)."""
        if self.job.micro_batch is not None:
            return [int(self.job.micro_batch)]
        choices = divisors(int(self.job.batch))
        if math.isfinite(self.job.micro_batches) and self.job.micro_batches >= 1:
            hint = self.job.batch / self.job.micro_batches
            choices.sort(key=lambda b: abs(math.log(b / hint)))
        return choices

    def tp_choices(self, type_index: int) -> list[int]:
        """Tensor-parallel degrees a stage on the type may use (powers of two up to its limit)."""
        resource = self.catalog.resources[type_index]
        return [t for t in powers_of_two(resource.tensor_parallel_limit) if t <= resource.max_units]

    @_memo
    def measured_times(self, type_index: int, tp: int, m: int) -> tuple[np.ndarray, tuple[str, ...]]:
        """((L,) measured seconds per micro-batch of m samples, NaN where none; (L,) source of
        each: "measured" (an entry for (type, tp, m)), "interpolated" (linear in the micro-batch
        between the layer's nearest measured sizes below and above m for (type, tp)) or
        the clock's name (no measured size on both sides: the clock's time)."""
        name = self.catalog.resources[type_index].name
        if (name, tp) not in self.measured_pairs:  # no layer measured on (type, tp): the clock's
            return np.full(self.num_layers, np.nan), (self.clock.name,) * self.num_layers
        seconds, sources = np.full(self.num_layers, np.nan), []
        for i, layer in enumerate(self.workload.layers):
            sizes = sorted(
                (e.micro_batch, e.forward_s * (1 + 3 * self.recomputed[i]) + e.backward_s)
                for e in layer.measured
                if e.type == name and e.tp == tp
            )
            below = [(s, v) for s, v in sizes if s <= m]
            above = [(s, v) for s, v in sizes if s >= m]
            if below and below[-1][0] == m:
                seconds[i], source = below[-1][1], "measured"
            elif below and above:
                (m0, v0), (m1, v1) = below[-1], above[0]
                seconds[i], source = v0 + (v1 - v0) * (m - m0) / (m1 - m0), "interpolated"
            else:
                source = self.clock.name
            sources.append(source)
        return seconds, tuple(sources)

    def time_sources(self, type_index: int, tp: int, m: int, first: int, last: int) -> str:
        """What layers first..last's times on (type, tp, m) come from, e.g. "measured" or
        "2 measured, 1 interpolated, 3 roofline" (the clock's name for the clock's times)."""
        if (self.catalog.resources[type_index].name, tp) not in self.measured_pairs:
            return self.clock.name
        sources = self.measured_times(type_index, tp, m)[1][first : last + 1]
        counts = {s: sources.count(s) for s in ("measured", "interpolated", self.clock.name) if s in sources}
        return next(iter(counts)) if len(counts) == 1 else ", ".join(f"{n} {s}" for s, n in counts.items())

    @_memo
    def layer_times(self, type_index: int, tp: int, m: int) -> np.ndarray:
        """(L,) seconds per micro-batch of m samples per replica on one device of a tp-way group:
        the measured forward + backward where the layer has an entry for (type, tp, m), linear
        between its measured sizes around m (`measured_times`), else the larger of the clock's
        compute time on 1/tp of the work and the HBM traffic other than serial_mem_bytes (both
        with the recomputed fraction), plus serial_mem_bytes at HBM bandwidth (memory-bound kernels
        of their own, in series with the matmuls; with `serial_recomputed`), input reads and the
        exposed part of the layer's tensor-parallel All-Reduces (the forward pass's again under full
        recomputation)."""
        r = self.catalog.resources[type_index]
        fp8 = self.fp8 and r.fp8_peak_flops is not None
        compute = self.clock.compute_seconds(r, self.flops, self.sparse_kind, tp, m, self.recomputed, fp8)
        memory = m * (self.mem_bytes - self.serial_bytes) * (1 + self.recomputed) / (tp * r.mem_bw)
        serial = m * self.serial_bytes * (1 + self.serial_recomputed) / (tp * r.mem_bw)
        io = m * self.io_bytes / r.io_bw
        comm = np.zeros_like(compute)
        if tp > 1:
            dim = r.network.dimensions[0]
            steps = steps_per_phase(dim.algorithm, tp)
            redone = 1.5 if self.job.recompute == "full" else 1.0  # the forward pass's All-Reduce again
            comm = (
                2 * m * self.tp_bytes * redone * (tp - 1) / tp / dim.bandwidth
                + self.tp_collectives * redone * 2 * steps * dim.latency
            )
        comm = comm * self.clock.tp_exposed(r)
        times = np.maximum(compute, memory) + serial + io + comm
        measured, _ = self.measured_times(type_index, tp, m)
        return np.where(np.isnan(measured), times, measured)

    @_memo
    def least_unit_seconds(self, micro_batch: int | None = None) -> np.ndarray:
        """(L, T) the least device-seconds per sample of each layer on each type: the minimum over
        t and per-replica micro-batches m dividing `micro_batch` (None: the batch, so every
        micro-batch) of t·layer_times(type, t, m)/m. A stage of t·d devices running b = m·d
        samples a micro-batch spends at least the sum of its layers' values per sample (in
        device-seconds, t·d·τ/b)."""
        batch = int(self.job.batch) if micro_batch is None else int(micro_batch)
        least = np.full((self.num_layers, self.num_types), np.inf)
        for y in range(self.num_types):
            for t in self.tp_choices(y):
                for m in divisors(batch):
                    least[:, y] = np.minimum(least[:, y], t * self.layer_times(y, t, m) / m)
        return least

    @_memo
    def moves(self, type_index: int, tp: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """`measured_moves` of the workload's layers on (type, tp, m)."""
        return measured_moves(self.workload.layers, self.catalog.resources[type_index].name, tp, m)

    @_memo
    def time_prefix(self, type_index: int, tp: int, m: int) -> np.ndarray:
        """(L + 1,) prefix sums of `layer_times`."""
        return np.concatenate([[0.0], np.cumsum(self.layer_times(type_index, tp, m))])

    @_memo
    def dp_allreduce(self, type_index: int, tp: int) -> tuple[np.ndarray, np.ndarray]:
        """(alpha s/byte, beta s), each (K,) for d = 1..K: the All-Reduce of W bytes among d
        data-parallel replicas of tp-way groups takes W·alpha[d−1] + beta[d−1]. The replicas fill
        the type's network with its first dimension shrunk to P_1 // tp NPUs (the group takes
        the rest)."""
        r = self.catalog.resources[type_index]
        dims = list(r.network.dimensions)
        dims[0] = dataclasses.replace(dims[0], size=max(1, dims[0].size // tp))
        network = dataclasses.replace(r.network, dimensions=tuple(dims))
        most = max(1, min(r.max_units // tp, network.total_size))
        alpha, beta, _ = allreduce_coefficients(network, most, self.job.chunks, self.job.collective == "themis")
        return alpha, beta

    @_memo
    def link_matrix(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(bandwidth B/s, latency s, dollars per byte), each (sites, sites): 0 bandwidth where
        two sites have no link; a site with itself has no link cost (bandwidth inf)."""
        n = len(self.sites)
        bandwidth = np.zeros((n, n))
        latency = np.zeros((n, n))
        price = np.zeros((n, n))
        np.fill_diagonal(bandwidth, np.inf)
        for i, a in enumerate(self.sites):
            for j, b in enumerate(self.sites):
                link = self.catalog.link(a, b) if i != j else None
                if link is not None:
                    bandwidth[i, j], latency[i, j], price[i, j] = link.bandwidth, link.latency, link.dollars_per_byte
        return bandwidth, latency, price
