"""The roofline clock (docs/parallel-plans.md, docs/clocks.md): a layer computes at the type's
catalogue peak times its dense or sparse efficiency, the tensor-parallel collectives are all
exposed, the pipeline is plain 1F1B and every matmul is BF16."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from hps.config.types import ResourceType
from hps.costmodel.clocks.base import bubble_slots


def roofline_seconds(
    resource: ResourceType, flops: np.ndarray, sparse: np.ndarray, tp: int, m: int, recomputed: float
) -> np.ndarray:
    """(L,) seconds: m·F·(1 + r/3) / (t·peak·e), F FLOP per sample (forward + backward, a third
    of it forward: r recomputed forward passes add r/3), e the type's efficiency_sparse on sparse
    layers and efficiency_dense on the others."""
    efficiency = np.where(sparse, resource.efficiency_sparse, resource.efficiency_dense)
    return m * flops * (1 + recomputed / 3) / (tp * resource.peak_flops * efficiency)


@dataclasses.dataclass(frozen=True)
class RooflineClock:
    """The roofline: the catalogue's peak_TFLOPs and efficiencies, nothing fitted."""

    name: ClassVar[str] = "roofline"
    fp8_weight_bytes: ClassVar[float] = 0.0
    keeps_unit_inputs: ClassVar[bool] = False

    def compute_seconds(
        self, resource: ResourceType, flops: np.ndarray, sparse: np.ndarray, tp: int, m: int, recomputed: float
    ) -> np.ndarray:
        return roofline_seconds(resource, flops, sparse, tp, m, recomputed)

    def tp_exposed(self, resource: ResourceType) -> float:
        return 1.0

    def computes_fp8(self, resource: ResourceType) -> bool:
        return False

    def bubble_slots(self, stages: int, micro_batches: int) -> float:
        return bubble_slots(stages, micro_batches)

    def extrapolated(self, resource: ResourceType) -> bool:
        """Never: the roofline reads only the catalogue's required fields."""
        return False


CLOCK = RooflineClock
