"""The kernel clock (docs/published-runs.md, docs/clocks.md): the roofline made kernel-level, its
constants per type from the catalogue (`matmul_efficiency_max` and the other optional
[[resource]] fields, `hps.config.catalog_kernel`).

What it changes, per layer and device, and per iteration:
- matmul efficiency depends on the work per device: a layer call of w FLOP (m·F_l/t, forward +
  backward of one micro-batch) runs at e_max·w/(w + w_half) of the peak, so small per-device work
  runs far below the roofline (a fixed w_half/(e_max·peak) of time per layer call: kernel launches,
  tails of waves, the non-matmul kernels between them);
- FP8 matmuls at the type's FP8 dense peak where the job computes in FP8, with their own e_max;
- the tensor-parallel All-Reduces are overlapped with the matmuls but for a fitted fraction.
Sparse layers, memory-bound layers (HBM bandwidth), the gradient sync overlapped with the last
backward in 25 MiB buckets and the optimizer step at HBM bandwidth are the roofline's terms, kept.

Fallback rule, for a type whose catalogue entry lacks a constant: e_max its efficiency_dense,
w_half DEFAULT_HALF_WORK_FLOP (0: no work-dependent efficiency), all of its tensor-parallel
collectives exposed, no FP8 without
fp8_peak_TFLOPs, the BF16 e_max at the FP8 peak without fp8_matmul_efficiency_max; such a type is
`extrapolated`, as is a type whose constants the catalogue derived from another type's
(`kernel_derived_from`).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from hps.config.types import ResourceType
from hps.costmodel.clocks.roofline import roofline_seconds

DEFAULT_HALF_WORK_FLOP = 0.0
"""w_half, FLOP, of a type whose catalogue gives none: 0, so that such a type runs at e_max
whatever its work (the roofline's constant efficiency). A w_half carried from another type would
charge w_half/(peak·e_max) a layer call (0.74 ms at H100's fit), which on types far from the
fitted ones (CPUs, small GPUs) and small layers is an extrapolation without support."""


def matmul_efficiency(work_flop: np.ndarray, e_max: float, half_work_flop: float) -> np.ndarray:
    """Fraction of peak of a layer call of `work_flop` FLOP per device: e_max·w/(w + w_half)."""
    work = np.asarray(work_flop, np.float64)
    return e_max * work / (work + half_work_flop)


def call_seconds(work_flop: np.ndarray, peak_flops: float, e_max: float, half_work_flop: float) -> np.ndarray:
    """Seconds of a layer call of `work_flop` FLOP per device: w/(peak·e(w)) = (w + w_half)/(peak·e_max)."""
    work = np.asarray(work_flop, np.float64)
    return np.where(work > 0, (work + half_work_flop) / (peak_flops * e_max), 0.0)


DEFAULT_RESIDUALS = (-0.3, 0.3)
"""(low, high) of a type whose catalogue names no held-out residuals: no published run on its
family was held out, so the band is set wide (twice the largest held-out miss on any family)."""
EXTRAPOLATION_WIDENING = 2.0
"""How much wider the band of an extrapolated type is than its family's held-out residuals."""


@dataclasses.dataclass(frozen=True)
class KernelClock:
    """The kernel clock. Its constants are the catalogue's, per type (the run's choices, FP8
    matmuls and the interleaved schedule, are the job's)."""

    name: ClassVar[str] = "kernel"

    def peak_flops(self, resource: ResourceType, fp8: bool) -> float:
        """FLOP/s of the type's matmuls: its FP8 dense peak where `fp8`, else peak_flops."""
        return resource.fp8_peak_flops if fp8 else resource.peak_flops

    def e_max(self, resource: ResourceType, fp8: bool) -> float:
        """Fraction of `peak_flops` that large matmul work reaches on the type."""
        bf16 = resource.matmul_efficiency_max
        bf16 = resource.efficiency_dense if bf16 is None else bf16
        fp8_e = resource.fp8_matmul_efficiency_max
        return (bf16 if fp8_e is None else fp8_e) if fp8 else bf16

    def half_work_flop(self, resource: ResourceType) -> float:
        """w_half, FLOP per device of a layer call that runs at half of e_max."""
        given = resource.matmul_half_work_flop
        return DEFAULT_HALF_WORK_FLOP if given is None else given

    def compute_seconds(
        self, resource: ResourceType, flops: np.ndarray, sparse: np.ndarray, tp: int, m: int, recomputed: np.ndarray,
        fp8: bool,
    ) -> np.ndarray:  # fmt: skip
        """Dense layers: `call_seconds` of m·F/t FLOP at the type's peak, times 1 + ρ for the
        recomputed fraction ρ; sparse layers: the roofline's."""
        calls = call_seconds(
            m * flops / tp, self.peak_flops(resource, fp8), self.e_max(resource, fp8), self.half_work_flop(resource)
        )
        roofline = roofline_seconds(resource, flops, sparse, tp, m, recomputed)
        return np.where(sparse, roofline, calls * (1 + recomputed))

    def tp_exposed(self, resource: ResourceType) -> float:
        return 1.0 if resource.tp_comm_exposed is None else resource.tp_comm_exposed

    def extrapolated(self, resource: ResourceType, fp8: bool) -> bool:
        """Whether the type's constants were derived from another type's (`kernel_derived_from`)
        or one the clock uses is missing from its catalogue entry: e_max (FP8's where `fp8`, else
        BF16's), w_half or the exposed tp fraction."""
        e_max = resource.fp8_matmul_efficiency_max if fp8 else resource.matmul_efficiency_max
        missing = None in (e_max, resource.matmul_half_work_flop, resource.tp_comm_exposed)
        return missing or resource.kernel_derived_from is not None

    def residuals(self, resource: ResourceType, fp8: bool) -> tuple[float, float]:
        """The type's held-out residuals (`kernel_residual_low`/`_high`), EXTRAPOLATION_WIDENING
        times wider where the type is extrapolated; DEFAULT_RESIDUALS where the catalogue names none."""
        low, high = resource.kernel_residual_low, resource.kernel_residual_high
        if low is None or high is None:
            return DEFAULT_RESIDUALS
        if self.extrapolated(resource, fp8):
            low, high = max(EXTRAPOLATION_WIDENING * low, -0.9), EXTRAPOLATION_WIDENING * high
        return low, high


CLOCK = KernelClock
