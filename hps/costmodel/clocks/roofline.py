"""The roofline clock (docs/parallel-plans.md, docs/clocks.md): a layer computes at the type's
catalogue peak (its FP8 peak where the job computes in FP8) times its dense or sparse
efficiency, and the tensor-parallel collectives are all exposed."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from hps.config.types import ResourceType

ROOFLINE_RESIDUALS = (-0.45, 0.18)
"""(low, high) predicted / published throughput − 1 of the roofline over every published run
(it fits none of them: docs/prediction-trust.md), on every type."""


def roofline_seconds(
    resource: ResourceType, flops: np.ndarray, sparse: np.ndarray, tp: int, m: int, recomputed: np.ndarray,
    fp8: bool = False,
) -> np.ndarray:  # fmt: skip
    """(L,) seconds: m·F·(1 + ρ) / (t·peak·e), F FLOP per sample (forward + backward), ρ the
    fraction of it recomputed, e the type's efficiency_sparse on sparse layers and
    efficiency_dense on the others, peak its FP8 peak where `fp8` (dense layers)."""
    efficiency = np.where(sparse, resource.efficiency_sparse, resource.efficiency_dense)
    peak = np.where(sparse | (not fp8), resource.peak_flops, resource.fp8_peak_flops if fp8 else 1.0)
    return m * flops * (1 + recomputed) / (tp * peak * efficiency)


@dataclasses.dataclass(frozen=True)
class RooflineClock:
    """The roofline: the catalogue's peak_TFLOPs, fp8_peak_TFLOPs and efficiencies, nothing fitted."""

    name: ClassVar[str] = "roofline"

    def compute_seconds(
        self, resource: ResourceType, flops: np.ndarray, sparse: np.ndarray, tp: int, m: int, recomputed: np.ndarray,
        fp8: bool,
    ) -> np.ndarray:  # fmt: skip
        return roofline_seconds(resource, flops, sparse, tp, m, recomputed, fp8)

    def tp_exposed(self, resource: ResourceType) -> float:
        return 1.0

    def extrapolated(self, resource: ResourceType, fp8: bool) -> bool:
        """Never: the roofline reads only the catalogue's datasheet fields."""
        return False

    def residuals(self, resource: ResourceType, fp8: bool) -> tuple[float, float]:
        return ROOFLINE_RESIDUALS


CLOCK = RooflineClock
