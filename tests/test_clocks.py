"""The parallel-plan model's clocks (hps.costmodel.clocks, docs/clocks.md): the roofline is the
roofline formula, the kernel clock built from the catalogue predicts what its fitted constants
predicted when they lived in experiment code, and a type without constants is extrapolated."""

import dataclasses

import pytest

from hps.config.types import Job, steps_per_phase
from hps.costmodel.clocks.base import CLOCKS, clock_named
from hps.costmodel.clocks.kernel import DEFAULT_HALF_WORK_FLOP
from hps.costmodel.parallel.problem import ParallelProblem
from hps.studies.published_runs import _catalog, score_run
from hps.studies.published_table import RUNS
from hps.workloads import build_workload


def test_the_roofline_clock_is_the_roofline_formula_for_one_layer():
    """One dense FFN layer of Llama 3 8B on a 2-way H100 group, m = 2 samples, full recomputation,
    in plain Python: max(compute, HBM traffic) + input reads + the tp All-Reduces."""
    workload, catalog = build_workload("llama3-8b"), _catalog()
    job = Job(batch=8, throughput=1e-6, samples=8, micro_batch=8, recompute="full")
    y = catalog.index("h100")
    r, layer, m, tp, extra = catalog.resources[y], workload.layers[2], 2, 2, 1.0
    compute = m * layer.flops * (1 + extra / 3) / (tp * r.peak_flops * r.efficiency_dense)
    memory = m * layer.mem_bytes * (1 + extra / 3) / (tp * r.mem_bw)
    dim = r.network.dimensions[0]
    comm = 2 * m * layer.tp_bytes * (1 + extra / 2) * (tp - 1) / tp / dim.bandwidth
    comm += layer.tp_collectives * (1 + extra / 2) * 2 * steps_per_phase(dim.algorithm, tp) * dim.latency
    want = max(compute, memory) + m * layer.io_bytes / r.io_bw + comm
    assert layer.kind == "dense" and comm > 0
    problem = ParallelProblem(workload, catalog, job, clock=clock_named("roofline"))
    assert problem.layer_times(y, tp, m)[2] == pytest.approx(want, rel=1e-14)


KERNEL_BEFORE = {
    "nemo-h100-70b": (20.223558840701997, 69.34322738647461),
    "mcore-462b": (12.560190032696104, 48.96249979734421),
    "neuron-trn1-70b": (125.18444522589076, 18.248589038848877),
    "nemo-gb200-405b": (67.92414163985526, 173.43918228149414),
}
"""(iteration s, GiB per device) of runs under the kernel-level model at the constants
`hps.studies.published_runs.KERNEL` held before they moved into the catalogues (printed by that
code): FP8 with interleaving, BF16 at t = 8 and 16 stages, Trainium at t = 16, GB200 FP8. The
memory of the interleaved runs was counted as plain 1F1B's then."""
SWIGLU = {"nemo-h100-70b", "nemo-gb200-405b", "neuron-trn1-70b"}
"""Llama runs, whose SwiGLU stash has since lost swish(gate) (Megatron-Core's fused SwiGLU
recomputes it), and whose interleaved runs hold Megatron's warm-up count: their memory is not
what it was."""


@pytest.mark.parametrize("key", sorted(KERNEL_BEFORE))
def test_the_kernel_clock_from_the_catalogue_predicts_as_the_fitted_constants_did(key):
    """The same iteration; the same memory but on the Llama runs (SWIGLU)."""
    run = next(r for r in RUNS if r.key == key)
    score = score_run(run, "kernel")
    iteration, memory = KERNEL_BEFORE[key]
    assert score["iteration_s"] == pytest.approx(iteration, rel=1e-12)
    if key not in SWIGLU:  # the Llama runs' memory: tests/test_published_runs.py
        assert score["memory_gib"] == pytest.approx(memory, rel=1e-12)


def test_a_type_without_kernel_constants_is_extrapolated_by_the_stated_rule():
    catalog = _catalog()
    l4, h100, b200 = (catalog.resources[catalog.index(n)] for n in ("l4", "h100", "b200"))
    kernel = clock_named("kernel")
    assert kernel.extrapolated(l4, False) and kernel.extrapolated(l4, True)
    assert kernel.e_max(l4, False) == l4.efficiency_dense and kernel.half_work_flop(l4) == DEFAULT_HALF_WORK_FLOP == 0
    assert kernel.tp_exposed(l4) == 1.0 and l4.fp8_peak_flops is None
    assert not kernel.extrapolated(h100, False) and not kernel.extrapolated(h100, True)
    assert b200.kernel_derived_from == "h100" and kernel.extrapolated(b200, False) and kernel.extrapolated(b200, True)
    no_fp8_fit = dataclasses.replace(h100, fp8_matmul_efficiency_max=None)
    assert kernel.extrapolated(no_fp8_fit, True) and kernel.e_max(no_fp8_fit, True) == h100.matmul_efficiency_max
    derived = dataclasses.replace(h100, kernel_derived_from="a100-80")
    assert kernel.extrapolated(derived, False)
    assert not any(clock_named("roofline").extrapolated(r, fp8) for r in catalog.resources for fp8 in (False, True))


def test_clocks_are_named_immutable_and_keep_problems_apart():
    assert CLOCKS[0] == "kernel" and set(CLOCKS) == {"roofline", "kernel"}
    assert [clock_named(name).name for name in CLOCKS] == list(CLOCKS)
    assert clock_named("kernel") == clock_named("kernel")
    assert hash(clock_named("roofline")) == hash(clock_named("roofline")) and clock_named("roofline") != clock_named(
        "kernel"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        clock_named("kernel").name = "wall"
    with pytest.raises(ValueError, match="unknown clock 'wall'"):
        clock_named("wall")
    workload, catalog = build_workload("llama3-8b"), _catalog()
    job = Job(batch=8, throughput=1e-6, samples=8, micro_batch=8)
    roofline = ParallelProblem(workload, catalog, job, clock=clock_named("roofline"))
    kernel = ParallelProblem(workload, catalog, job)
    assert roofline.shape() != kernel.shape() and roofline.restricted(None).clock == roofline.clock
