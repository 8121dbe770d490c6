"""The clock of the parallel-plan model: how long a layer takes on one device of a tensor-parallel
group, and the few other questions whose answer depends on how the kernels run (docs/clocks.md).

A clock is an immutable, hashable object (a `ParallelProblem` keys its derived tables by it).
`clock_named` makes one by name: a clock is one module of this package, named as in CLOCKS, whose
`CLOCK` is its class.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from hps.config.types import ResourceType

CLOCKS = ("roofline", "kernel")
"""The clocks by name, the default first (each the module `hps.costmodel.clocks.<name>`)."""


class Clock(Protocol):
    """What the parallel-plan model asks a clock. `name`: one of CLOCKS; `fp8_weight_bytes`: bytes
    per parameter of the FP8 weight copies a stage that computes in FP8 keeps beside its state;
    `keeps_unit_inputs`: under full recomputation a stage keeps one input per pipeline unit (a
    checkpointed block keeps its input), not one per layer."""

    name: str
    fp8_weight_bytes: float
    keeps_unit_inputs: bool

    def compute_seconds(
        self, resource: ResourceType, flops: np.ndarray, sparse: np.ndarray, tp: int, m: int, recomputed: float
    ) -> np.ndarray:
        """(L,) compute seconds of each layer's forward and backward of m samples on one device
        of a tp-way group of `resource`: `flops` (L,) FLOP per sample (forward + backward),
        `sparse` (L,) bool the sparse layers, `recomputed` forward passes redone per backward
        (1.0 under full recomputation, else 0.0)."""
        ...

    def tp_exposed(self, resource: ResourceType) -> float:
        """The fraction of the tensor-parallel collectives' time not hidden behind matmuls."""
        ...

    def computes_fp8(self, resource: ResourceType) -> bool:
        """Whether the type's matmuls run in FP8 (it then keeps FP8 stashes and weight copies)."""
        ...

    def bubble_slots(self, stages: int, micro_batches: int) -> float:
        """Stage times per iteration of the pipeline schedule of `stages` stages."""
        ...

    def extrapolated(self, resource: ResourceType) -> bool:
        """Whether the clock times the type by a fallback rule, not by its catalogue's constants."""
        ...


def bubble_slots(stages: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """Stage times per iteration of a 1F1B pipeline: M + (S − 1)/v, v model chunks a device
    (Megatron-LM's interleaved schedule, Narayanan et al. 2021, Sec. 2.2.2; v = 1: plain 1F1B)."""
    return micro_batches + (stages - 1) / virtual_stages


def clock_named(name: str, **switches) -> Clock:
    """The clock `name` (one of CLOCKS), made with `switches` (its constructor's keyword arguments;
    the roofline takes none). ValueError for an unknown name."""
    if name not in CLOCKS:
        raise ValueError(f"unknown clock {name!r}; choose among {', '.join(CLOCKS)}")
    return importlib.import_module(f"{__package__}.{name}").CLOCK(**switches)
