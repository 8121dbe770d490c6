"""Which stage-table entries the exact solver drops (hps/methods/exact_parallel/dominance.py), against
a plain reference that walks each span's entries in ($/hour, τ, φ, option) order, on random
entries with many ties and some NaN, and the stage tables of small random instances kept whole
against the same tables pruned."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hps.costmodel.parallel.problem import ParallelProblem
from hps.methods.exact_parallel.dominance import undominated
from hps.methods.exact_parallel.table import StageTable
from tests.parallel_instances import random_instance


def ascending(x: float) -> tuple:
    """A sort key with NaN last."""
    return (1, 0.0) if math.isnan(x) else (0, x)


def undominated_reference(row, col, group, rate, time, tail) -> list[int]:
    """Per (row, group), entries in ($/hour, τ, φ, column) order; an entry is dropped when the
    earlier entry of least τ, or of least φ (the earliest on ties, NaN last), has τ and φ no larger."""
    runs: dict = {}
    for i in range(len(row)):
        runs.setdefault((row[i], group[i]), []).append(i)
    dropped = set()
    for members in runs.values():
        members.sort(key=lambda i: (rate[i], ascending(time[i]), ascending(tail[i]), col[i]))
        fastest = leanest = None
        for i in members:
            for j in (fastest, leanest):
                if j is not None and time[j] <= time[i] and tail[j] <= tail[i]:
                    dropped.add(i)
            if fastest is None or ascending(time[i]) < ascending(time[fastest]):
                fastest = i
            if leanest is None or ascending(tail[i]) < ascending(tail[leanest]):
                leanest = i
    return [i for i in range(len(row)) if i not in dropped]


@pytest.mark.parametrize("seed", range(60))
def test_undominated_equals_the_plain_walk_on_random_entries_with_ties(seed):
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 30)), int(rng.integers(1, 12))
    cells = np.flatnonzero(rng.random(rows * cols) < rng.uniform(0.2, 1.0))
    row, col = cells // cols, cells % cols
    units = rng.integers(1, 4, cols)  # options of equal units tie on $/hour
    rate = (units * 2.5)[col]
    group = rng.integers(0, 3, len(cells))
    time, tail = rng.choice([1.0, 2.0, 3.0], len(cells)), rng.choice([0.5, 1.0, 1.5], len(cells))
    if seed % 5 == 0:
        time[rng.random(len(cells)) < 0.1] = np.nan
        tail[rng.random(len(cells)) < 0.1] = np.nan
    expected = undominated_reference(row, col, group, rate, time, tail)
    assert undominated(row, col, group, rate, time, tail).tolist() == expected


@pytest.mark.parametrize("seed", range(8))
def test_a_pruned_table_keeps_exactly_the_undominated_entries_of_the_whole_one(seed):
    workload, catalog, job = random_instance(seed)
    problem = ParallelProblem(workload, catalog, job)
    b = int(job.micro_batch or job.batch)
    whole, pruned = StageTable(problem, b, prune=False), StageTable(problem, b)
    assert not whole.pruned and pruned.pruned
    keys = list(zip(whole.entry_span, whole.entry_type, whole.fits))
    kept = set(zip(pruned.entry_span.tolist(), pruned.entry_opt.tolist()))
    for i, (span, y, f) in enumerate(keys):
        rivals = [
            j for j, key in enumerate(keys)
            if key == (span, y, f) and j != i and whole.rate[j] <= whole.rate[i]
            and whole.time[j] <= whole.time[i] and whole.tail[j] <= whole.tail[i]
        ]  # fmt: skip
        if not rivals:  # nothing beats it: never dropped
            assert (int(whole.entry_span[i]), int(whole.entry_opt[i])) in kept
    whole.prune()
    for name in ("entry_span", "entry_opt", "time", "tail", "rate", "fits", "units"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(pruned, name))
