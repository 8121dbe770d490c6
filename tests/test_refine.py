"""Stage moves (`hps.methods.search.refine`): the hill climb that polishes a policy's best plan."""

from __future__ import annotations

import math
import random

import jax.numpy as jnp
import numpy as np

from hps.costmodel.schedule import build_params
from hps.costmodel.schedule.cost import segment_table
from hps.methods.search.refine import refine, stage_moves
from hps.methods.search.scoring import RANK_FEASIBLE, batch_best
from hps.methods.search.single import score_single_types
from hps.reference import placement as reference
from tests.instances import random_instance


def moves_by_hand(schedule: list[int], n_types: int) -> set[tuple[int, ...]]:
    """Every plan one stage move away, enumerated plainly: for each layer l and other type t,
    layers l..(end of l's stage) or (start of l's stage)..l retyped to t."""
    n = len(schedule)
    out = set()
    for l in range(n):
        start = l
        while start > 0 and schedule[start - 1] == schedule[l]:
            start -= 1
        end = l
        while end < n - 1 and schedule[end + 1] == schedule[l]:
            end += 1
        for t in range(n_types):
            if t != schedule[l]:
                for first, last in ((l, end), (start, l)):
                    plan = list(schedule)
                    plan[first : last + 1] = [t] * (last - first + 1)
                    out.add(tuple(plan))
    return out


def test_stage_moves_list_every_plan_one_move_away_exactly_once():
    rng = random.Random(0)
    max_layers, max_types = 9, 4
    for _ in range(30):
        n, n_types = rng.randint(1, max_layers), rng.randint(1, max_types)
        schedule = [rng.randrange(n_types) for _ in range(n)]
        padded = jnp.asarray(schedule + [0] * (max_layers - n), jnp.int32)
        type_mask = jnp.arange(max_types) < n_types
        candidates, valid = stage_moves(padded, jnp.int32(n), type_mask)
        got = [tuple(row[:n]) for row in np.asarray(candidates)[np.asarray(valid)].tolist()]
        assert len(got) == len(set(got)), schedule  # no plan scored twice
        assert set(got) == moves_by_hand(schedule, n_types), schedule


def test_refine_ends_where_no_stage_move_improves_under_the_reference_evaluator():
    rng = random.Random(1)
    feasible = 0
    for _ in range(6):
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(4, 7), n_types=rng.randint(2, 3))
        params = build_params(workload, catalog, job, max_layers=8, max_types=3, max_replicas=512)
        table = segment_table(params)
        start = batch_best(score_single_types(table, params))
        best, evaluations = refine(table, params, start)
        n = len(workload.layers)
        plan = [int(t) for t in np.asarray(best.schedule)[:n]]
        cost = reference.evaluate(workload, catalog, job, plan)["cost"]
        start_cost = reference.evaluate(workload, catalog, job, [int(t) for t in np.asarray(start.schedule)[:n]])[
            "cost"
        ]
        assert cost <= start_cost * (1 + 1e-5)
        if int(best.rank) == RANK_FEASIBLE:
            feasible += 1
            assert math.isclose(float(best.primary), cost, rel_tol=1e-5)
            neighbours = moves_by_hand(plan, len(catalog.resources))
            cheapest = min(reference.evaluate(workload, catalog, job, list(p))["cost"] for p in neighbours)
            assert cheapest >= cost * (1 - 1e-5)
        assert int(evaluations) >= len(moves_by_hand(plan, len(catalog.resources)))
    assert feasible >= 3  # the local-optimum check ran
