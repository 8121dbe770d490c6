"""The kernel clock (hps.costmodel.clocks.kernel, docs/clocks.md, docs/published-runs.md)."""

import numpy as np
import pytest

from hps.config.types import Job, Workload
from hps.costmodel.clocks.base import clock_named
from hps.costmodel.clocks.kernel import call_seconds, matmul_efficiency
from hps.costmodel.parallel.pipeline import bubble_slots, in_flight_chunks
from hps.costmodel.parallel.problem import ParallelProblem
from hps.studies.published_runs import _catalog
from hps.workloads.transformer_layers import Numerics, attention_block


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


def test_interleaving_holds_korthikanti_s_first_stage_count_and_plain_1f1b_its_own():
    """Plain 1F1B: stage p of S holds min(S − p, M) micro-batches; interleaved, the first stage
    S + (S − 1)/v micro-batches (Korthikanti et al. 2022, Sec. 4.2.3), the last (v − 1)S + 1 chunks,
    never more than all M·v chunks."""
    assert list(in_flight_chunks(np.arange(4), 4, 3, 1)) == [3, 3, 2, 1]
    assert in_flight_chunks(0, 16, 64, 4) / 4 == 16 + 15 / 4
    assert in_flight_chunks(15, 16, 64, 4) == 3 * 16 + 1
    assert in_flight_chunks(0, 16, 2, 4) == 8


def test_fp8_peak_only_for_fp8_runs_on_types_that_have_one():
    catalog = _catalog()
    h100, tpu = catalog.resources[catalog.index("h100")], catalog.resources[catalog.index("tpu-v5p")]
    clock = clock_named("kernel")
    assert clock.peak_flops(h100, True) == 1978.9e12 and clock.e_max(h100, True) == 0.474
    assert tpu.fp8_peak_flops is None and clock.e_max(tpu, False) == 0.905
    assert clock.peak_flops(h100, False) == 989.4e12 and clock.e_max(h100, False) == 0.68


def test_fp8_stash_keeps_matmul_inputs_in_one_byte():
    """Llama 3 405B's attention keeps p·S·(4H + 2Hkv) bytes, 2·S·H of them the QKV and output-projection
    inputs: as FP8 copies that is S·H·2·(2 − 1) bytes less; the SwiGLU FFN (S·H + S·F) less."""
    from hps.workloads import build_workload

    attention, ffn = build_workload("llama3-405b").layers[1:3]
    s, h, f = 8192, 16384, 53248
    assert attention.stash - attention.fp8_stash == 2 * s * h
    assert ffn.stash - ffn.fp8_stash == s * h + s * f


def test_an_fp8_run_keeps_fp8_stashes_and_weight_copies_and_runs_only_on_fp8_types():
    import dataclasses

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
        problem = ParallelProblem(workload, catalog, dataclasses.replace(job, fp8=fp8), clock=clock_named("kernel"))
        memory[fp8] = stage_memory(problem, 8, [0], [last], [1], [1])[:2]
        allowed = problem.span_allowed(
            np.array([0, 0]), np.array([last, last]), np.array([catalog.index("h100"), catalog.index("a100-80")])
        )
        assert list(allowed) == [True, not fp8]  # the A100 has no FP8 peak
    params = sum(layer.parameters for layer in workload.layers)
    stash = sum(layer.stash for layer in workload.layers)
    fp8_stash = sum(layer.fp8_stash for layer in workload.layers)
    assert abs(memory[True][0][0] - memory[False][0][0] - 2.0 * params) < 1.0  # two FP8 weight bytes
    assert abs(memory[True][1][0] - 8 * fp8_stash) < 1.0 and abs(memory[False][1][0] - 8 * stash) < 1.0


def test_standard_attention_s_squared_kernels_run_in_series_and_flash_has_none():
    """serial_mem_bytes of standard attention is the S² part of its traffic, 12·a·S²·p (the scores
    written, read and written by the softmax, read by AV: 4·a·S² values forward, x3), timed after
    max(compute, the rest of the traffic), a third again under either recomputation; FlashAttention
    rows have none."""
    s, h, a, p = 2048, 2304, 24, 2.0
    standard = attention_block("a", s, h, a, numerics=Numerics(p, flash=False, dropout=True))
    flash = attention_block("a", s, h, a, numerics=Numerics(p, flash=True, dropout=True))
    assert standard.serial_mem_bytes == 12 * a * s * s * p and flash.serial_mem_bytes == 0.0
    catalog = _catalog()
    y = catalog.index("a100-80")
    r = catalog.resources[y]
    for recompute, again in (("none", 0.0), ("selective", 1 / 3), ("full", 1 / 3)):
        job = Job(4, 1e-6, 4e3, micro_batch=4, virtual_stages=1, fp8=False, recompute=recompute)
        problem = ParallelProblem(Workload("w", (standard,)), catalog, job)
        rho = problem.recomputed
        compute = clock_named("kernel").compute_seconds(r, problem.flops, problem.sparse_kind, 1, 4, rho, False)[0]
        rest = 4 * (standard.mem_bytes - standard.serial_mem_bytes) * (1 + rho[0]) / r.mem_bw
        serial = 4 * standard.serial_mem_bytes * (1 + again) / r.mem_bw
        assert problem.layer_times(y, 1, 4)[0] == pytest.approx(max(compute, rest) + serial, rel=1e-12), recompute
