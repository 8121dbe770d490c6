"""The numpy stage-move climb (hps.methods.search.climb_at_scale) against `evaluate_plan`
(every move it prices, priced again whole) and against the jnp climb (`refine`) it mirrors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.costmodel.schedule.cost import segment_table
from hps.costmodel.schedule.from_params import generated_instance
from hps.costmodel.schedule.plan import evaluate_plan, schedule_plan
from hps.methods.search.climb_at_scale import _apply, _moves, _Plan, _price, climb_at_scale
from hps.methods.search.refine import MAX_ROUNDS, refine
from hps.methods.search.scoring import RANK_FEASIBLE, batch_best, score
from hps.placement.env.generator import HARD_KNOBS, InstanceSplit, generate_instances
from tests.helpers import evaluated

HARD = InstanceSplit("climb-hard", 8, 14, 3, 5, **HARD_KNOBS, salt=71)
EASY = InstanceSplit("climb-easy", 8, 14, 3, 5, salt=72)


@pytest.fixture(scope="module")
def pool():
    """Three instances of each split, stacked: hard ones (tight caps) and easy ones (where
    most random plans are feasible)."""
    both = [generate_instances(jax.random.PRNGKey(8), 3, split) for split in (HARD, EASY)]
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b]), *both)


def _instance(pool, i):
    one = jax.tree.map(lambda x: x[i], pool)
    return one, generated_instance(jax.device_get(one))


def test_every_priced_move_matches_the_whole_plan_scored_again(pool):
    rng = np.random.default_rng(3)
    checked = feasible = 0
    for i in range(12):
        _, inst = _instance(pool, i % 6)
        blocks = 1 + i // 6  # plans of one stage, then of two (most plans of many stages fail)
        schedule = np.repeat(rng.integers(0, inst.num_types, blocks), -(-inst.num_layers // blocks))[: inst.num_layers]
        plan = _Plan(inst, schedule)
        moves = _moves(plan, inst.num_types)
        ok, cost, penalty = _price(inst, plan, moves)
        for m in range(len(ok)):
            moved = _apply(schedule, moves, m)
            want = evaluated(inst, schedule_plan(moved.tolist()))
            assert bool(ok[m]) == want["feasible"]
            if want["feasible"]:
                assert cost[m] == pytest.approx(want["cost"], rel=1e-9)
            else:
                assert penalty[m] > 0
        checked, feasible = checked + len(ok), feasible + int(ok.sum())
        # every move is a different schedule, one move away
        assert len({tuple(_apply(schedule, moves, m)) for m in range(len(ok))}) == len(ok)
    assert checked > 500 and feasible > 50


def test_the_climb_ends_where_the_jnp_climb_ends(pool):
    ended_feasible = 0
    for i in range(6):
        one, inst = _instance(pool, i)
        params = one.placement
        start = np.zeros(int(params.max_layers), np.int32)  # every layer on type 0
        table = segment_table(params)
        scored = batch_best(score(table, params, jnp.asarray(start)[None]))
        want, _ = refine(table, params, scored)
        n = inst.num_layers
        got, got_score, evaluations = climb_at_scale(inst, start[:n], max_rounds=MAX_ROUNDS)
        assert evaluations > 0 and got_score == evaluate_plan(inst, schedule_plan(got.tolist()))
        assert bool(want.rank == RANK_FEASIBLE) == got_score.feasible
        if got_score.feasible:
            assert got_score.cost == pytest.approx(float(want.primary), rel=1e-4)
        ended_feasible += got_score.feasible
    assert ended_feasible >= 3


def test_a_climb_never_ends_worse_than_it_starts_and_stops_at_its_deadline(pool):
    _, inst = _instance(pool, 0)
    start = np.arange(inst.num_layers) % inst.num_types
    before = evaluated(inst, schedule_plan(start.tolist()))
    got, after, _ = climb_at_scale(inst, start)
    assert after.feasible or not before["feasible"]
    if before["feasible"]:
        assert after.cost <= before["cost"]
    same, _, evaluations = climb_at_scale(inst, start, seconds=0.0)
    assert evaluations == 0 and np.array_equal(same, start)
