"""The clock of the parallel-plan model: how long a layer takes on one device of a tensor-parallel
group, and the few other questions whose answer depends on how the kernels run (docs/clocks.md).

A clock is an immutable, hashable object (a `ParallelProblem` keys its derived tables by it).
`clock_named` makes one by name: a clock is one module of this package, named as in CLOCKS, whose
`CLOCK` is its class.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

from hps.config.types import CLOCKS

if TYPE_CHECKING:
    import numpy as np

    from hps.config.types import ResourceType


class Clock(Protocol):
    """What the parallel-plan model asks a clock. `name`: one of CLOCKS."""

    name: str

    def compute_seconds(
        self, resource: ResourceType, flops: np.ndarray, sparse: np.ndarray, tp: int, m: int, recomputed: np.ndarray,
        fp8: bool,
    ) -> np.ndarray:  # fmt: skip
        """(L,) compute seconds of each layer's forward and backward of m samples on one device
        of a tp-way group of `resource`: `flops` (L,) FLOP per sample (forward + backward),
        `sparse` (L,) bool the sparse layers, `recomputed` (L,) the fraction of those FLOP redone
        by recomputation (1/3 under full recomputation: one forward pass), `fp8` the matmuls at
        the type's FP8 peak (the job's choice; only types with an FP8 peak are asked)."""
        ...

    def tp_exposed(self, resource: ResourceType) -> float:
        """The fraction of the tensor-parallel collectives' time not hidden behind matmuls."""
        ...

    def extrapolated(self, resource: ResourceType, fp8: bool) -> bool:
        """Whether the clock times the type by a fallback rule, not by its catalogue's constants."""
        ...

    def residuals(self, resource: ResourceType, fp8: bool) -> tuple[float, float]:
        """(low, high): the range of predicted / true throughput − 1 the clock's held-out
        published runs show on the type (docs/prediction-trust.md)."""
        ...


def throughput_range(throughput: float, low: float, high: float) -> tuple[float, float]:
    """The true throughput a prediction of `throughput` stands for where predicted / true − 1
    lies in [low, high]: (throughput / (1 + high), throughput / (1 + low))."""
    return throughput / (1 + high), throughput / (1 + low)


def clock_named(name: str) -> Clock:
    """The clock `name` (one of CLOCKS). ValueError for an unknown name."""
    if name not in CLOCKS:
        raise ValueError(f"unknown clock {name!r}; choose among {', '.join(CLOCKS)}")
    return importlib.import_module(f"{__package__}.{name}").CLOCK()
