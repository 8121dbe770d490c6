"""Typed, validated configuration objects. Internal units: bytes, seconds, FLOP, bytes/s.

Loaders (``hps.config.loaders``) turn TOML files into these; ``hps.placement.model.params`` turns them
into padded jnp pytrees.
"""

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


@dataclass(frozen=True)
class Catalog:
    """A priced device catalogue."""

    name: str
    resources: tuple[ResourceType, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.resources)

    def index(self, name: str) -> int:
        return self.names.index(name)


@dataclass(frozen=True)
class Layer:
    """One layer, per-sample numbers: flops (FLOP, forward+backward), *_bytes (bytes).

    measured_time: optional seconds per sample on named resource types; overrides the roofline.
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


@dataclass(frozen=True)
class Workload:
    """An ordered layer table."""

    name: str
    layers: tuple[Layer, ...]
    defaults: JobDefaults | None = None
    description: str = ""


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

    @property
    def schedule_model(self) -> bool:
        """Whether the job is the schedule (HeterPS) model's: no bubble, replicated states."""
        return math.isinf(self.micro_batches) and self.state_sharding == "none"
