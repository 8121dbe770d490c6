"""The exact solver's least-rate program (hps/methods/exact_parallel/program.py), one stage count a
step over every boundary, against a reference that walks the boundaries one at a time from the end
(the program as first written), on random tables with ties, missing entries and unlinked sites,
and on the stage tables of small random instances."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hps.costmodel.parallel.problem import ParallelProblem
from hps.methods.exact_parallel.program import boundary_program, lex_argmin
from hps.methods.exact_parallel.table import StageTable
from tests.parallel_instances import random_instance


def boundary_by_boundary(rate, time, first, after, link_ok):
    """The program boundary by boundary, last first, each span's rate and τ given per stage count
    q (Q + 1, spans, sites): (value, slow, choice, next_site) as `boundary_program` returns them."""
    q_count, _, n_sites = rate.shape
    k_count = int(first[-1]) + 1
    value = np.full((k_count + 1, q_count, n_sites), np.inf)
    slow = np.full_like(value, np.inf)
    value[k_count, 0], slow[k_count] = 0.0, 0.0
    handed = np.full_like(value, np.inf)
    handed_slow = np.full_like(value, np.inf)
    handed[k_count, 1:], handed_slow[k_count, 1:] = value[k_count, :-1, :1], 0.0
    choice = np.zeros((k_count, q_count, n_sites), np.int64)
    next_site = np.zeros((k_count, q_count, n_sites), np.int64)
    q_index, s_index = np.arange(q_count)[:, None], np.arange(n_sites)[None, :]
    for k in range(k_count - 1, -1, -1):
        spans = np.flatnonzero(first == k)
        cand = rate[:, spans].transpose(1, 0, 2) + handed[after[spans]]
        cand_slow = np.maximum(time[:, spans].transpose(1, 0, 2), handed_slow[after[spans]])
        best = lex_argmin(cand, cand_slow, axis=0)
        value[k], slow[k] = cand[best, q_index, s_index], cand_slow[best, q_index, s_index]
        choice[k] = spans[best]
        if k > 0:
            masked = np.where(link_ok[k - 1][None], value[k][:, None, :], np.inf)
            arg = lex_argmin(masked, slow[k][:, None, :], axis=2)
            handed[k, 1:] = masked[q_index, s_index, arg][:-1]
            handed_slow[k, 1:] = slow[k][q_index, arg][:-1]
            next_site[k, 1:] = arg[:-1]
    return value, slow, choice, next_site


def random_program(seed: int):
    """Inputs of `boundary_program`: K boundaries, every span (i, j), rates drawn from a few
    values (so that sums tie), some missing."""
    rng = np.random.default_rng(seed)
    k_count, q_count, n_sites = int(rng.integers(1, 9)), int(rng.integers(1, 7)), int(rng.integers(1, 4))
    first, after = (np.array(a) for a in zip(*[(i, j) for i in range(k_count) for j in range(i + 1, k_count + 1)]))
    shape = (q_count, len(first), n_sites)
    rate = rng.choice([1.0, 2.0, 3.0, 0.5, 1.5], size=shape)
    time = rng.choice([0.1, 0.2, 0.3], size=shape)
    missing = rng.random(shape) < 0.3
    rate[missing], time[missing] = np.inf, np.inf
    link_ok = rng.random((max(k_count - 1, 0), n_sites, n_sites)) < 0.6
    link_ok |= np.eye(n_sites, dtype=bool)[None]
    return rate, time, first, after, link_ok


@pytest.mark.parametrize("seed", range(200))
def test_the_program_by_stage_counts_equals_it_boundary_by_boundary(seed):
    rate, time, first, after, link_ok = random_program(seed)
    rows = np.random.default_rng(seed).integers(0, len(rate), len(rate))  # the variant of each q
    value, slow, choice, next_site = boundary_program(rate, time, rows, first, after, link_ok)
    ref_value, ref_slow, ref_choice, ref_next = boundary_by_boundary(rate[rows], time[rows], first, after, link_ok)
    np.testing.assert_array_equal(value, ref_value)
    found = np.isfinite(ref_value)  # where no plan is, the rest says nothing
    np.testing.assert_array_equal(slow[found], ref_slow[found])
    np.testing.assert_array_equal(choice[found[:-1]], ref_choice[found[:-1]])
    # the site after a stage ending before k (q stages left with it) is one of value[k, q − 1]'s
    handed = np.zeros(next_site.shape, bool)
    handed[1:, 1:] = (link_ok[:, None] & found[1:-1, :-1, None, :]).any(axis=3)
    np.testing.assert_array_equal(next_site[handed], ref_next[handed])


@pytest.mark.parametrize("seed", range(12))
def test_the_tables_least_rate_plans_cost_what_the_program_says(seed):
    workload, catalog, job = random_instance(seed)
    problem = ParallelProblem(workload, catalog, job)
    b = int(job.micro_batch or job.batch)
    table = StageTable(problem, b)
    if not len(table.time):
        return
    rng = np.random.default_rng(seed)
    for theta, phi in [(np.inf, np.inf), *zip(rng.choice(table.time, 3), rng.choice(table.tail, 3))]:
        weight = table.rate * (1 + rng.random(len(table.rate)))
        for w in (None, weight):
            least, solved = table.least_rate(theta, phi, weight=w)
            rest = table.least_from(solved)
            assert set(rest) == {*table.starts.tolist(), problem.num_layers}
            np.testing.assert_array_equal(rest[0], least)
            for stages in np.flatnonzero(np.isfinite(least)):
                if stages == 0:
                    continue
                entries = table.plan_of(int(stages), solved)
                assert len(entries) == stages
                values = table.rate if w is None else w
                assert math.isclose(values[entries].sum(), least[stages], rel_tol=1e-12)
                assert (table.time[entries] <= theta).all() and (table.tail[entries] <= phi).all()
                spans = [table.stage(e)[:2] for e in entries]
                assert spans[0][0] == 0 and spans[-1][1] == problem.num_layers - 1
                assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("seed", range(12))
def test_the_least_work_is_the_programs_least_r_tau_taken_as_plain_minima(seed):
    """`least_work` (no entry order, the table left unpruned) is never above the program's least
    Σ r·τ, and below it only by the near-ties the program settles by τ (1e-12 relative)."""
    workload, catalog, job = random_instance(seed)
    problem = ParallelProblem(workload, catalog, job)
    b = int(job.micro_batch or job.batch)
    table, whole = StageTable(problem, b), StageTable(problem, b, prune=False)
    if not len(table.time):
        return
    rng = np.random.default_rng(seed)
    for theta, phi in [(np.inf, np.inf), *zip(rng.choice(table.time, 3), rng.choice(table.tail, 3) * 2)]:
        program = table.least_rate(theta, phi, weight=table.rate * table.time)[0]
        for work in (table.least_work(theta, phi), whole.least_work(theta, phi)):
            np.testing.assert_array_equal(np.isfinite(work), np.isfinite(program))
            found = np.isfinite(program)
            assert (work[found] <= program[found]).all()
            np.testing.assert_allclose(work[found], program[found], rtol=1e-12)
