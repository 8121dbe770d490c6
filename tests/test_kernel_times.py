"""The kernel clock (hps.costmodel.clocks.kernel, docs/clocks.md, docs/published-runs.md)."""

import numpy as np

from hps.costmodel.clocks.base import bubble_slots, clock_named
from hps.costmodel.clocks.kernel import call_seconds, matmul_efficiency
from hps.studies.published_runs import _catalog


def test_matmul_efficiency_falls_for_small_work_and_reaches_e_max_for_large():
    work = np.array([1e9, 1e11, 1e12, 1e14])
    e = matmul_efficiency(work, 0.7, 5e11)
    assert np.all(np.diff(e) > 0) and e[0] < 0.01 and abs(e[-1] - 0.7) < 0.01
    assert abs(matmul_efficiency(5e11, 0.7, 5e11) - 0.35) < 1e-12  # half of e_max at w_half


def test_call_seconds_is_work_over_peak_times_efficiency():
    work = np.array([0.0, 2e12])
    seconds = call_seconds(work, 1e15, 0.5, 1e12)
    assert seconds[0] == 0.0
    assert abs(seconds[1] - 2e12 / (1e15 * matmul_efficiency(2e12, 0.5, 1e12))) < 1e-15


def test_interleaving_divides_the_bubble_and_one_chunk_is_plain_1f1b():
    assert bubble_slots(8, 64, 1) == 64 + 7
    assert bubble_slots(8, 64, 5) == 64 + 7 / 5


def test_fp8_peak_only_for_fp8_runs_on_types_that_have_one():
    catalog = _catalog()
    h100, tpu = catalog.resources[catalog.index("h100")], catalog.resources[catalog.index("tpu-v5p")]
    clock = clock_named("kernel", fp8=True)
    assert clock.peak_flops(h100) == 1978.9e12 and clock.e_max(h100) == 0.474
    assert clock.peak_flops(tpu) == 459e12 and clock.e_max(tpu) == 0.905
    plain = clock_named("kernel")
    assert plain.peak_flops(h100) == 989.4e12 and plain.e_max(h100) == 0.68


def test_fp8_stash_keeps_matmul_inputs_in_one_byte():
    """Llama 3 405B's attention keeps p·S·(4H + 2Hkv) bytes, 2·S·H of them the QKV and output-projection
    inputs: as FP8 copies that is S·H·2·(2 − 1) bytes less; the SwiGLU FFN (S·H + S·F) less."""
    from hps.workloads import build_workload

    attention, ffn = build_workload("llama3-405b").layers[1:3]
    s, h, f = 8192, 16384, 53248
    assert attention.stash - attention.fp8_stash == 2 * s * h
    assert ffn.stash - ffn.fp8_stash == s * h + s * f


def test_an_fp8_run_keeps_fp8_stashes_and_weight_copies_only_on_fp8_types():
    from hps.config.types import Job
    from hps.costmodel.parallel.problem import ParallelProblem
    from hps.costmodel.parallel.stages import stage_memory
    from hps.workloads import build_workload

    workload = build_workload("llama3-8b")
    catalog = _catalog()
    job = Job(batch=8, throughput=1e-6, samples=8, micro_batch=8, precision="bf16-adam", zero=1)
    last = len(workload.layers) - 1
    memory = {}
    for fp8 in (False, True):
        problem = ParallelProblem(workload, catalog, job, clock=clock_named("kernel", fp8=fp8))
        types = [catalog.index("h100"), catalog.index("a100-80")]
        static, act, _ = stage_memory(problem, 8, [0, 0], [last, last], [1, 1], [1, 1], types)
        memory[fp8] = (static, act)
    params = sum(layer.parameters for layer in workload.layers)
    stash = sum(layer.stash for layer in workload.layers)
    fp8_stash = sum(layer.fp8_stash for layer in workload.layers)
    assert abs(memory[True][0][0] - memory[False][0][0] - 2.0 * params) < 1.0  # h100: two FP8 weight bytes
    assert abs(memory[True][1][0] - 8 * fp8_stash) < 1.0 and abs(memory[False][1][0] - 8 * stash) < 1.0
    assert memory[True][0][1] == memory[False][0][1] and memory[True][1][1] == memory[False][1][1]  # a100: bf16
