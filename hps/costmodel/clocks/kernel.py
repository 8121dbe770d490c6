"""A kernel-level time model for parallel plans (docs/published-runs.md), beside the catalogue's
roofline: a `ParallelProblem` built with `time_model=KernelTimes(...)` uses it; without one the
model is the roofline of docs/parallel-plans.md, unchanged.

What it changes, per layer and device, and per iteration:
- matmul efficiency depends on the work per device: a layer call of w FLOPs (m·F_l/t, forward +
  backward of one micro-batch) runs at e_max·w/(w + w_half) of the peak, so small per-device work
  runs far below the roofline (a fixed w_half/(e_max·peak) of time per layer call: kernel launches,
  tails of waves, the non-matmul kernels between them);
- FP8 matmuls at the type's FP8 dense peak where the run computes in FP8;
- the interleaved 1F1B schedule of Megatron-LM (Narayanan et al. 2021, Sec. 2.2.2): with v model
  chunks a device, the bubble is (S − 1)/v stage times instead of S − 1;
- with full recomputation a stage keeps one input per pipeline unit (a checkpointed block keeps
  its input, not the input of each of its rows);
- an FP8 run keeps its matmul inputs as FP8 copies (the layers' `fp8_stash_bytes`) and FP8 copies
  of its weights (`fp8_weight_bytes` a parameter).
- the tensor-parallel All-Reduces are overlapped with the matmuls but for a fitted fraction.
Memory-bound layers (HBM bandwidth), the gradient sync overlapped
with the last backward in 25 MiB buckets and the optimizer step at HBM bandwidth are the roofline
model's terms, kept.
"""

from __future__ import annotations

import dataclasses

import numpy as np

FP8_PEAK_FLOPS = {"h100": 1978.9e12, "h200": 1978.9e12, "b200": 4500e12, "gb200": 5000e12}
"""Dense FP8 tensor peaks, FLOP/s: H100/H200 SXM 3,958 TFLOPS with sparsity = 1,979 dense (NVIDIA
H100 datasheet; H200 has the same GH100 compute); HGX B200 9,000 sparse = 4,500 dense; GB200's
B200 10,000 sparse = 5,000 dense (the sources of cloud-2026's [H100], [B200], [GB200])."""


@dataclasses.dataclass(frozen=True)
class KernelTimes:
    """Constants of the kernel-level model. `efficiency`: type name -> e_max, the fraction of the
    BF16 peak large matmul work reaches (fitted; docs/published-runs.md names the runs);
    `fp8_efficiency`: type name -> e_max at the type's FP8 peak; `half_work_flop`: w_half, the per-device work of a
    layer call at which it runs at half of e_max (FLOP, fitted); `tp_exposed`: the fraction of the
    tensor-parallel All-Reduces not hidden behind matmuls (fitted; Megatron-LM's --tp-comm-overlap
    splits them into chunks that run under the neighbouring GEMMs); `fp8`: the run's matmuls are FP8;
    `virtual_stages`: model chunks per device of the interleaved schedule (1: plain 1F1B);
    `fp8_weight_bytes`: bytes per parameter of the FP8 weight copies an FP8 run keeps beside its
    state (Transformer Engine caches each weight's FP8 copy and its transpose across the
    micro-batches of an iteration: 2)."""

    efficiency: dict
    fp8_efficiency: dict
    half_work_flop: float
    tp_exposed: float = 1.0
    fp8: bool = False
    virtual_stages: int = 1
    fp8_weight_bytes: float = 2.0

    def computes_fp8(self, type_name: str) -> bool:
        """Whether the type's matmuls run in FP8: an FP8 run on a type with an FP8 peak."""
        return self.fp8 and type_name in FP8_PEAK_FLOPS

    def peak_flops(self, type_name: str, bf16_peak: float) -> float:
        """FLOP/s of the type's matmuls: its FP8 dense peak for an FP8 run where it has one."""
        return FP8_PEAK_FLOPS[type_name] if self.computes_fp8(type_name) else bf16_peak

    def e_max(self, type_name: str) -> float:
        """Fraction of the peak (`peak_flops`) large matmul work reaches on the type."""
        return self.fp8_efficiency[type_name] if self.computes_fp8(type_name) else self.efficiency[type_name]


def matmul_efficiency(work_flop: np.ndarray, e_max: float, half_work_flop: float) -> np.ndarray:
    """Fraction of peak of a layer call of `work_flop` FLOP per device: e_max·w/(w + w_half)."""
    work = np.asarray(work_flop, np.float64)
    return e_max * work / (work + half_work_flop)


def compute_seconds(work_flop: np.ndarray, peak_flops: float, e_max: float, half_work_flop: float) -> np.ndarray:
    """Seconds of a layer call of `work_flop` FLOP per device: w/(peak·e(w)) = (w + w_half)/(peak·e_max)."""
    work = np.asarray(work_flop, np.float64)
    return np.where(work > 0, (work + half_work_flop) / (peak_flops * e_max), 0.0)


def bubble_slots(stages: int, micro_batches: int, virtual_stages: int) -> float:
    """Stage times per iteration of a 1F1B pipeline: M + (S − 1)/v (v = 1: plain 1F1B)."""
    return micro_batches + (stages - 1) / virtual_stages
