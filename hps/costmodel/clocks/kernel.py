"""The kernel clock (docs/published-runs.md, docs/clocks.md): the roofline made kernel-level, its
constants per type from the catalogue (`matmul_efficiency_max` and the other optional
[[resource]] fields, `hps.config.catalog_kernel`).

What it changes, per layer and device, and per iteration:
- matmul efficiency depends on the work per device: a layer call of w FLOP (m·F_l/t, forward +
  backward of one micro-batch) runs at e_max·w/(w + w_half) of the peak, so small per-device work
  runs far below the roofline (a fixed w_half/(e_max·peak) of time per layer call: kernel launches,
  tails of waves, the non-matmul kernels between them);
- FP8 matmuls at the type's FP8 dense peak where the run computes in FP8;
- the interleaved 1F1B schedule of Megatron-LM (Narayanan et al. 2021, Sec. 2.2.2): with v model
  chunks a device, the bubble is (S − 1)/v stage times instead of S − 1;
- with full recomputation a stage keeps one input per pipeline unit (a checkpointed block keeps
  its input, not the input of each of its rows);
- an FP8 run keeps its matmul inputs as FP8 copies (the layers' `fp8_stash_bytes`) and FP8 copies
  of its weights (`fp8_weight_bytes` a parameter);
- the tensor-parallel All-Reduces are overlapped with the matmuls but for a fitted fraction.
Sparse layers, memory-bound layers (HBM bandwidth), the gradient sync overlapped with the last
backward in 25 MiB buckets and the optimizer step at HBM bandwidth are the roofline's terms, kept.

Fallback rule, for a type whose catalogue entry lacks a constant: e_max its efficiency_dense,
w_half DEFAULT_HALF_WORK_FLOP, all of its tensor-parallel collectives exposed, no FP8 without
fp8_peak_TFLOPs, the BF16 e_max at the FP8 peak without fp8_matmul_efficiency_max; such a type is
`extrapolated`.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from hps.config.types import ResourceType
from hps.costmodel.clocks.base import bubble_slots
from hps.costmodel.clocks.roofline import roofline_seconds

DEFAULT_HALF_WORK_FLOP = 0.5e12
"""w_half, FLOP, of a type whose catalogue gives none: H100's fit (docs/published-runs.md), the
only type whose w_half was fitted."""


def matmul_efficiency(work_flop: np.ndarray, e_max: float, half_work_flop: float) -> np.ndarray:
    """Fraction of peak of a layer call of `work_flop` FLOP per device: e_max·w/(w + w_half)."""
    work = np.asarray(work_flop, np.float64)
    return e_max * work / (work + half_work_flop)


def call_seconds(work_flop: np.ndarray, peak_flops: float, e_max: float, half_work_flop: float) -> np.ndarray:
    """Seconds of a layer call of `work_flop` FLOP per device: w/(peak·e(w)) = (w + w_half)/(peak·e_max)."""
    work = np.asarray(work_flop, np.float64)
    return np.where(work > 0, (work + half_work_flop) / (peak_flops * e_max), 0.0)


@dataclasses.dataclass(frozen=True)
class KernelClock:
    """The kernel clock. Its constants are the catalogue's, per type; its fields are switches of
    the run it times (they describe the job, not the hardware, and are to move into the job):
    `fp8`: the run's matmuls are FP8 where the type has an FP8 peak; `virtual_stages`: model
    chunks per device of the interleaved schedule (1: plain 1F1B); `fp8_weight_bytes`: bytes per
    parameter of the FP8 weight copies an FP8 run keeps beside its state (Transformer Engine
    caches each weight's FP8 copy and its transpose across the micro-batches of an iteration: 2)."""

    fp8: bool = False
    virtual_stages: int = 1
    fp8_weight_bytes: float = 2.0
    name: ClassVar[str] = "kernel"
    keeps_unit_inputs: ClassVar[bool] = True

    def computes_fp8(self, resource: ResourceType) -> bool:
        """Whether the type's matmuls run in FP8: an FP8 run on a type with an FP8 peak."""
        return self.fp8 and resource.fp8_peak_flops is not None

    def peak_flops(self, resource: ResourceType) -> float:
        """FLOP/s of the type's matmuls: its FP8 dense peak where it computes FP8, else peak_flops."""
        return resource.fp8_peak_flops if self.computes_fp8(resource) else resource.peak_flops

    def e_max(self, resource: ResourceType) -> float:
        """Fraction of `peak_flops` that large matmul work reaches on the type."""
        bf16 = resource.matmul_efficiency_max
        bf16 = resource.efficiency_dense if bf16 is None else bf16
        fp8 = resource.fp8_matmul_efficiency_max
        return (bf16 if fp8 is None else fp8) if self.computes_fp8(resource) else bf16

    def half_work_flop(self, resource: ResourceType) -> float:
        """w_half, FLOP per device of a layer call that runs at half of e_max."""
        given = resource.matmul_half_work_flop
        return DEFAULT_HALF_WORK_FLOP if given is None else given

    def compute_seconds(
        self, resource: ResourceType, flops: np.ndarray, sparse: np.ndarray, tp: int, m: int, recomputed: float
    ) -> np.ndarray:
        """Dense layers: `call_seconds` of m·F/t FLOP at the type's peak, times 1 + r/3 for r
        recomputed forward passes; sparse layers: the roofline's."""
        calls = call_seconds(
            m * flops / tp, self.peak_flops(resource), self.e_max(resource), self.half_work_flop(resource)
        )
        roofline = roofline_seconds(resource, flops, sparse, tp, m, recomputed)
        return np.where(sparse, roofline, calls * (1 + recomputed / 3))

    def tp_exposed(self, resource: ResourceType) -> float:
        return 1.0 if resource.tp_comm_exposed is None else resource.tp_comm_exposed

    def bubble_slots(self, stages: int, micro_batches: int) -> float:
        return bubble_slots(stages, micro_batches, self.virtual_stages)

    def extrapolated(self, resource: ResourceType) -> bool:
        """Whether a constant the clock uses on the type is missing from its catalogue entry: e_max
        (FP8's where it computes FP8, else BF16's), w_half or the exposed tp fraction."""
        e_max = resource.fp8_matmul_efficiency_max if self.computes_fp8(resource) else resource.matmul_efficiency_max
        return None in (e_max, resource.matmul_half_work_flop, resource.tp_comm_exposed)


CLOCK = KernelClock
