"""Typed, validated configuration objects (units: bytes, seconds, FLOP, bytes/s), which the
loaders (``hps.config.loaders``) build from TOML files."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

ALGORITHMS = ("ring", "direct", "switch", "halving_doubling")
ALGORITHM_CODE = {name: code for code, name in enumerate(ALGORITHMS)}  # the int code of each in jnp arrays
RESOURCE_KINDS = ("cpu", "gpu", "other")
LAYER_KINDS = ("dense", "sparse")
COLLECTIVE_POLICIES = ("baseline", "themis")
STATE_SHARDINGS = ("none", "auto")
"""How a stage may hold its parameter and optimizer state: "none" replicates it on every replica;
"auto" also considers sharding it across the stage's replicas (ZeRO-3/FSDP style)."""
PRECISIONS = {
    "bf16-adam": (2.0, 2.0, 12.0),
    "bf16-adam-fp32-grads": (2.0, 4.0, 12.0),
    "fp32-adam": (4.0, 4.0, 8.0),
    "fp32-sgd": (4.0, 4.0, 0.0),
}
"""Training precision -> (parameter, gradient, optimizer) bytes per parameter: `bf16-adam` bf16
parameters and gradients, an fp32 master copy and two fp32 Adam moments; `-fp32-grads` with fp32
gradient buffers (Megatron-LM's default); `fp32-adam` fp32 throughout; `fp32-sgd` no optimizer state."""
ZERO_LEVELS = (0, 1, 2, 3)
"""ZeRO levels: what a stage's data-parallel replicas shard among themselves. 0 nothing, 1 the
optimizer state, 2 also the gradients, 3 also the parameters."""
RECOMPUTE = ("none", "selective", "full")
"""Activation recomputation: "none" keeps every activation of a micro-batch for its backward pass;
"selective" drops what each layer marks as cheap to recompute (attention's S x S softmax and
dropout, Korthikanti et al. 2022) and recomputes it; "full" keeps only each pipeline unit's input
and recomputes the forward pass during the backward."""
DEFAULT_MEMORY_HEADROOM = 0.05
"""Fraction of a device's memory a parallel plan leaves free when neither the job nor the type
names one: the runtime's context, communication buffers, library workspaces and allocator
fragmentation (docs/parallel-plans.md, "Memory headroom")."""
CLOCKS = ("kernel", "roofline")
"""What times a parallel plan's layers, by name, the default first (each the module
`hps.costmodel.clocks.<name>`; docs/clocks.md)."""
LAYER_NUMBERS = ("flops", "mem_bytes", "io_bytes", "act_bytes", "dense_param_bytes", "sparse_param_bytes")
"""The per-sample numbers of a `Layer` (its fields, and its file's keys, besides name and kind)."""


def steps_per_phase(algorithm: str, size: int) -> int:
    """Steps of one Reduce-Scatter or All-Gather phase on a dimension of `size` NPUs: ring P−1,
    direct 1, switch 1, halving_doubling ⌈log2 P⌉; 0 when P = 1. The rule in plain Python over
    algorithm names; `hps.collective.model.network.steps_per_phase_codes` is its jnp form over
    ALGORITHM_CODE arrays (a test checks that the two agree)."""
    if size <= 1:
        return 0
    if algorithm == "ring":
        return size - 1
    if algorithm in ("direct", "switch"):
        return 1
    if algorithm == "halving_doubling":
        return (size - 1).bit_length()  # ⌈log2 P⌉, integer-exact
    raise ValueError(f"unknown algorithm {algorithm!r}")


def stage_spans(schedule) -> list[tuple[int, int, int]]:
    """(first layer, last layer, type) of each stage of a schedule (one resource type index per
    layer): the maximal runs of one type."""
    spans, first = [], 0
    for layer in range(1, len(schedule) + 1):
        if layer == len(schedule) or schedule[layer] != schedule[first]:
            spans.append((first, layer - 1, schedule[first]))
            first = layer
    return spans


@dataclass(frozen=True)
class Dimension:
    """One network dimension."""

    size: int
    """NPUs along this dimension."""
    bandwidth: float
    """Bytes/s per NPU."""
    latency: float
    """Seconds per step."""
    algorithm: str
    """One of ALGORITHMS."""
    in_flight: int = 1
    """Phases the dimension serves at once (1 to MAX_IN_FLIGHT), each on its own lane with an
    equal share B/in_flight of the bandwidth and the full step latency (1: one at a time)."""


@dataclass(frozen=True)
class Network:
    """A multi-dimensional network of NPUs: dimensions[0] is dimension 1, the innermost (the
    fastest and smallest, e.g. a package or an NVLink domain)."""

    name: str
    dimensions: tuple[Dimension, ...]

    @property
    def total_size(self) -> int:
        return math.prod(d.size for d in self.dimensions)


@dataclass(frozen=True)
class ResourceType:
    """A catalogue entry: one resource type, rented by the unit (one GPU or accelerator chip, or
    one CPU node)."""

    name: str
    kind: str
    """One of RESOURCE_KINDS."""
    peak_flops: float
    """FLOP/s of one unit."""
    efficiency_dense: float
    efficiency_sparse: float
    """The fraction of peak_flops a dense and a sparse layer reach."""
    mem_bw: float
    """Memory bandwidth of one unit, bytes/s."""
    io_bw: float
    """Input data read by one unit, bytes/s."""
    nic_bw: float
    """Activations and gradients between pipeline stages, bytes/s per unit."""
    memory: float
    """Bytes per unit."""
    price_per_hour: float
    """Dollars per unit-hour."""
    max_units: int
    """Units available, at most network.total_size."""
    network: Network
    """The network that joins the units of this type."""
    site: str = ""
    """Where the units are (a provider and region, or a cluster); types of one site exchange
    pipeline activations over their NICs, types of two sites over a `Link` between them."""
    tp_max: int = 0
    """Largest tensor-parallel group (a power of two); 0: the size of the first network dimension
    (the scale-up domain, e.g. the 8 GPUs of an NVSwitch node)."""
    matmul_efficiency_max: float | None = None
    """Kernel clock (docs/clocks.md): the fraction of peak_flops large BF16 matmul work reaches,
    e_max; None: not fitted (the clock falls back to efficiency_dense)."""
    fp8_matmul_efficiency_max: float | None = None
    """Kernel clock: e_max at fp8_peak_flops; None: not fitted (the BF16 e_max)."""
    matmul_half_work_flop: float | None = None
    """Kernel clock: w_half, FLOP per device of a layer call run at half of e_max; None: 0."""
    fp8_peak_flops: float | None = None
    """Kernel clock: FLOP/s of one unit's dense FP8 matmuls; None: the type computes no FP8."""
    tp_comm_exposed: float | None = None
    """Kernel clock: the exposed fraction of the tensor-parallel collectives; None: all of it."""
    memory_headroom: float | None = None
    """Parallel plans: the fraction of `memory` a plan leaves free; None: DEFAULT_MEMORY_HEADROOM."""
    kernel_residual_low: float | None = None
    """Kernel clock: the least and largest held-out predicted / published throughput − 1 on the
    type's family; None: none held out (the clock's default band)."""
    kernel_residual_high: float | None = None
    kernel_derived_from: str | None = None
    """Kernel clock: the type whose fits this type's constants were derived from; None: its own."""

    @property
    def tensor_parallel_limit(self) -> int:
        """The largest tensor-parallel degree t (a power of two) a stage on this type may use."""
        limit = self.tp_max or self.network.dimensions[0].size
        return 1 << (max(1, limit).bit_length() - 1)


@dataclass(frozen=True)
class Link:
    """A network link between two sites: bandwidth (bytes/s, each direction), latency (s per
    transfer) and egress price (dollars per byte sent, either direction)."""

    sites: tuple[str, str]
    bandwidth: float
    latency: float
    dollars_per_byte: float


@dataclass(frozen=True)
class Catalog:
    """A priced device catalogue."""

    name: str
    resources: tuple[ResourceType, ...]
    links: tuple[Link, ...] = ()

    def link(self, site_a: str, site_b: str) -> Link | None:
        """The link joining two different sites (either order), or None where there is none."""
        for link in self.links:
            if set(link.sites) == {site_a, site_b}:
                return link
        return None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.resources)

    def index(self, name: str) -> int:
        return self.names.index(name)


@dataclass(frozen=True)
class Layer:
    """One layer, per-sample numbers: flops (FLOP, forward+backward), *_bytes (bytes).

    measured_time: optional seconds per sample on named resource types; overrides the roofline
    of the schedule model.

    The parallel-plan model also reads: `cut_after` (False: a pipeline stage may not end after this
    layer, e.g. the attention half of a transformer block), `stash_bytes` (activation bytes per
    sample the layer keeps for its backward pass; None: act_bytes), `fp8_stash_bytes` (the same where
    its matmuls run in FP8 and keep their inputs as 1-byte FP8 copies; None: stash_bytes),
    `selective_stash_bytes` (the same under selective recomputation; None: stash_bytes),
    `selective_flops` (FLOP per sample selective recomputation redoes; 0: none),
    `tp_comm_bytes` (bytes per
    sample the layer All-Reduces across a tensor-parallel group, forward and backward together;
    None: act_bytes), `tp_collectives` (how many All-Reduces those bytes take, for their
    latency), `serial_mem_bytes` (the part of mem_bytes that memory-bound kernels of their own
    move, timed in series with the layer's matmuls instead of hidden under them; 0: none) and
    `measured` (measured times per micro-batch on one device of a t-way group).
    Parameter bytes count 4 bytes a parameter (dense_param_bytes / 4 parameters).
    """

    name: str
    kind: str
    flops: float
    mem_bytes: float
    io_bytes: float
    act_bytes: float
    dense_param_bytes: float
    sparse_param_bytes: float
    measured_time: dict[str, float] = field(default_factory=dict)
    cut_after: bool = True
    stash_bytes: float | None = None
    fp8_stash_bytes: float | None = None
    selective_stash_bytes: float | None = None
    selective_flops: float = 0.0
    tp_comm_bytes: float | None = None
    tp_collectives: int = 1
    measured: tuple[MeasuredTime, ...] = ()
    serial_mem_bytes: float = 0.0

    @property
    def parameters(self) -> float:
        """Dense parameters (dense_param_bytes counts 4 bytes each)."""
        return self.dense_param_bytes / 4.0

    @property
    def stash(self) -> float:
        """Activation bytes per sample kept for the backward pass."""
        return self.act_bytes if self.stash_bytes is None else self.stash_bytes

    @property
    def fp8_stash(self) -> float:
        """Activation bytes per sample kept for the backward pass when the matmuls run in FP8."""
        return self.stash if self.fp8_stash_bytes is None else self.fp8_stash_bytes

    @property
    def selective_stash(self) -> float:
        """Activation bytes per sample kept for the backward pass under selective recomputation."""
        return self.stash if self.selective_stash_bytes is None else self.selective_stash_bytes

    @property
    def tp_bytes(self) -> float:
        """Bytes per sample All-Reduced across a tensor-parallel group (forward + backward)."""
        return self.act_bytes if self.tp_comm_bytes is None else self.tp_comm_bytes


@dataclass(frozen=True)
class MeasuredTime:
    """A layer's measured time per micro-batch on one device of a `tp`-way tensor-parallel group of
    resource type `type`, at `micro_batch` samples per replica: forward and backward seconds;
    optionally the seconds to move the layer's input activation onto such a group (a stage
    starting at the layer receives it) and its gradient (a stage ending before the layer
    receives it), None where not measured."""

    type: str
    tp: int
    micro_batch: int
    forward_s: float
    backward_s: float
    input_move_s: float | None = None
    gradient_move_s: float | None = None


@dataclass(frozen=True)
class JobDefaults:
    """A workload's default job: batch (samples/iteration), throughput floor (samples/s),
    samples to train, micro-batches per iteration (a positive integer, or inf: steady-state
    pipelining) and the state sharding allowed (one of STATE_SHARDINGS)."""

    batch: float
    throughput: float
    samples: float
    micro_batches: float = math.inf
    state_sharding: str = "none"
    micro_batch: float | None = None
    precision: str = "fp32-adam"
    zero: int = 0
    recompute: str | None = "none"
    virtual_stages: int | None = 1
    fp8: bool | None = False
    memory_headroom: float | None = None


@dataclass(frozen=True)
class Workload:
    """An ordered layer table.

    measured_call_s: optional seconds per micro-batch, on named resource types, that a stage
    spends on its calls whatever its layers (dispatching its forward, backward and gradient sum),
    as `hps profile` measures it; measured layer times are then each layer's share inside a
    stage, this fixed cost counted once per stage and micro-batch on top."""

    name: str
    layers: tuple[Layer, ...]
    defaults: JobDefaults | None = None
    description: str = ""
    measured_call_s: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """Training job: global batch B (samples/iteration), floor R (samples/s), N samples,
    the collective policy and its chunk count, micro-batches M per iteration (a positive integer,
    or inf: no pipeline bubble) and the state sharding allowed (one of STATE_SHARDINGS)."""

    batch: float
    throughput: float
    samples: float
    collective: str = "themis"
    chunks: int = 64
    micro_batches: float = math.inf
    state_sharding: str = "none"
    micro_batch: float | None = None
    """Parallel plans: samples per pipeline micro-batch across a stage's replicas (a divisor of
    batch); None: the exact solver searches the divisors of batch."""
    precision: str = "fp32-adam"
    """Parallel plans: one of PRECISIONS."""
    zero: int = 0
    """Parallel plans: one of ZERO_LEVELS."""
    recompute: str | None = "none"
    """Parallel plans: one of RECOMPUTE; None: the planner chooses."""
    virtual_stages: int | None = 1
    """Parallel plans: model chunks a device (interleaved 1F1B; 1: plain); None: the planner's choice."""
    fp8: bool | None = False
    """Parallel plans: FP8 matmuls (only on types with an FP8 peak); None: the planner's choice."""
    memory_headroom: float | None = None
    """Parallel plans: fraction of each device's memory left free, in [0, 1); None: each type's."""
    budget_per_hour: float | None = None
    """Parallel plans: the most dollars per hour the units may rent for; set, planners maximise
    throughput within it (and above the floor) instead of minimising cost."""

    @property
    def max_stage_replicas(self) -> int:
        """The most data-parallel replicas one stage can use: each runs at least one whole sample
        of a micro-batch, so floor(batch / micro_batches) (floor(batch) with no micro-batches)."""
        per_micro_batch = self.batch if math.isinf(self.micro_batches) else self.batch / self.micro_batches
        return max(int(per_micro_batch), 1)

    @property
    def schedule_model(self) -> bool:
        """Whether the job is the schedule (HeterPS) model's: no bubble, replicated states."""
        return math.isinf(self.micro_batches) and self.state_sharding == "none"


PLAN_FORMAT = "hps-plan/3"
"""The format tag of the parallel plan files hps writes."""
PLAN_FORMATS = ("hps-plan/2", "hps-plan/3")
"""The parallel plan file formats hps reads (hps-plan/3 adds the clock and schedule fields)."""


@dataclass(frozen=True)
class ParallelStage:
    """One pipeline stage of a parallel plan: layers first..last (0-based, both included) on
    resource type `type` (its name), `tp`-way tensor parallel inside each of `dp` data-parallel
    replicas: tp·dp units."""

    first: int
    last: int
    type: str
    tp: int
    dp: int

    @property
    def units(self) -> int:
        return self.tp * self.dp


@dataclass(frozen=True)
class PlanFile:
    """A parallel plan as written to and read from a plan file: the workload and catalogue (a zoo
    or shipped name, or a path), the job and the stages in pipeline order."""

    workload: str
    catalog: str
    job: Job
    stages: tuple[ParallelStage, ...]
    clock: str | None = None
    """The clock the plan was planned on (None: not recorded; hps-plan/2 records none)."""
    version: str = PLAN_FORMAT
    """The format it was read from (hps-plan/2 records no collective policy or chunks)."""
    workload_sha256: str | None = None
    """SHA-256 of the workload and catalogue files it was planned on (None: a name, or not recorded)."""
    catalog_sha256: str | None = None
