"""The kernel-level time model (hps.placement.model.parallel.kernel, docs/published-runs.md)."""

import numpy as np

from hps.placement.model.parallel.kernel import (
    FP8_PEAK_FLOPS,
    KernelTimes,
    bubble_slots,
    compute_seconds,
    matmul_efficiency,
)


def test_matmul_efficiency_falls_for_small_work_and_reaches_e_max_for_large():
    work = np.array([1e9, 1e11, 1e12, 1e14])
    e = matmul_efficiency(work, 0.7, 5e11)
    assert np.all(np.diff(e) > 0) and e[0] < 0.01 and abs(e[-1] - 0.7) < 0.01
    assert abs(matmul_efficiency(5e11, 0.7, 5e11) - 0.35) < 1e-12  # half of e_max at w_half


def test_compute_seconds_is_work_over_peak_times_efficiency():
    work = np.array([0.0, 2e12])
    seconds = compute_seconds(work, 1e15, 0.5, 1e12)
    assert seconds[0] == 0.0
    assert abs(seconds[1] - 2e12 / (1e15 * matmul_efficiency(2e12, 0.5, 1e12))) < 1e-15


def test_interleaving_divides_the_bubble_and_one_chunk_is_plain_1f1b():
    assert bubble_slots(8, 64, 1) == 64 + 7
    assert bubble_slots(8, 64, 5) == 64 + 7 / 5


def test_fp8_peak_only_for_fp8_runs_on_types_that_have_one():
    model = KernelTimes(efficiency={"h100": 0.6, "tpu-v5p": 0.8}, fp8_efficiency=0.4, half_work_flop=1e12, fp8=True)
    assert model.peak_flops("h100", 989.4e12) == FP8_PEAK_FLOPS["h100"] and model.e_max("h100") == 0.4
    assert model.peak_flops("tpu-v5p", 459e12) == 459e12 and model.e_max("tpu-v5p") == 0.8
