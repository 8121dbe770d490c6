"""The exact solver against brute force over every plan of the general model, and against
exhaustive search over HeterPS schedules; its certificate must prove each optimum (gap 0)."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import numpy as np
import pytest

from hps.config.types import Catalog, Dimension, Job, Layer, Network, ResourceType, Workload
from hps.costmodel.schedule import build_params
from hps.costmodel.schedule.plan import index_plan
from hps.costmodel.schedule.provisioning import build_instance
from hps.methods.exact_schedule import solve_exact
from hps.methods.exact_schedule.caps import plan_units, repair
from hps.methods.exact_schedule.dp import least_rate
from hps.methods.exact_schedule.prune import per_sample_seconds, work_bounds
from hps.methods.exact_schedule.table import stage_table
from tests.helpers import evaluated, search, search_generated
from tests.instances import random_instance


def every_plan(num_layers: int, num_types: int, heterps: bool):
    """Every plan: each set of stage boundaries × each type per stage (HeterPS: adjacent
    stages on different types)."""
    for mask in range(2 ** (num_layers - 1)):
        bounds = [0, *(i + 1 for i in range(num_layers - 1) if mask >> i & 1), num_layers]
        spans = list(zip(bounds[:-1], (b - 1 for b in bounds[1:])))
        for types in itertools.product(range(num_types), repeat=len(spans)):
            if heterps and any(a == b for a, b in zip(types, types[1:])):
                continue
            yield tuple((first, last, t) for (first, last), t in zip(spans, types))


def brute_force(inst, heterps: bool) -> float:
    costs = (evaluated(inst, plan) for plan in every_plan(inst.num_layers, inst.num_types, heterps))
    return min((s["cost"] for s in costs if s["feasible"]), default=math.inf)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_equals_brute_force_on_random_instances(seed):
    rng = random.Random(seed)
    feasible = 0
    for _ in range(80):
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(1, 5), n_types=rng.randint(1, 3))
        micro_batches = rng.choice([math.inf, 1, 2, 8])
        job = dataclasses.replace(job, micro_batches=micro_batches, state_sharding=rng.choice(["none", "auto"]))
        inst = build_instance(workload, catalog, job)
        for heterps in (False, True):
            want = brute_force(inst, heterps)
            result = solve_exact(inst, heterps=heterps)
            if math.isinf(want):
                assert result.plan is None
                continue
            feasible += 1
            assert result.cost == pytest.approx(want, rel=1e-12)
            assert result.gap == 0.0 and result.bound == pytest.approx(want, rel=1e-12)
    assert feasible >= 100


def test_exact_equals_exhaustive_on_heterps_instances():
    """300 HeterPS instances (M = inf, replicated states): the exact solver restricted to
    schedules finds exhaustive search's optimum (jnp, float32: to 1e-5)."""
    rng = random.Random(11)
    agree = 0
    for _ in range(300):
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(2, 5), n_types=rng.randint(2, 3))
        params = build_params(workload, catalog, job, max_layers=5, max_types=3, max_replicas=512)
        want = search("exhaustive", workload, catalog, job, params).cost
        got = solve_exact(build_instance(workload, catalog, job), heterps=True)
        cost = got.cost if got.plan else math.inf
        assert (math.isinf(cost) and math.isinf(want)) or cost == pytest.approx(want, rel=1e-5)
        assert got.gap == 0.0
        agree += 1
    assert agree == 300


def test_a_plan_may_split_one_type_into_several_stages():
    """Two layers of 1 GB dense parameters on one type with 6 GB per unit: as one stage the
    replicated state (4·2 GB) does not fit, so no HeterPS schedule is feasible; two stages of
    the same type (4 GB each) are, and the solver finds that plan."""
    layer = Layer("l", "dense", 1e9, 0.0, 0.0, 1e3, 1e9, 0.0)
    gpu = ResourceType(
        "gpu", "gpu", 1e12, 1.0, 1.0, 1e12, 1e12, 1e10, 6e9, 2.0, 64, Network("n", (Dimension(64, 1e11, 1e-6, "ring"),))
    )
    inst = build_instance(
        Workload("w", (layer, layer)), Catalog("c", (gpu,)), Job(batch=1000.0, throughput=2000.0, samples=1e6)
    )
    assert solve_exact(inst, heterps=True).plan is None
    general = solve_exact(inst)
    assert index_plan(general.plan, inst.catalog) == ((0, 0, 0), (1, 1, 0)) and general.gap == 0.0
    assert general.cost == pytest.approx(brute_force(inst, heterps=False), rel=1e-12)


def test_repair_meets_the_caps_on_the_same_boundaries():
    """Where the cheapest plan breaks a pooled cap, `repair` keeps its boundaries, meets every
    cap (evaluate_plan: feasible) and costs no less than brute force's optimum."""
    rng = random.Random(5)
    repaired = 0
    for _ in range(400):
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(2, 5), n_types=rng.randint(2, 3))
        inst = build_instance(workload, catalog, job)
        table = stage_table(inst, 1).dense()
        _, plan = least_rate(table.rate, table.time, None, False)
        if plan is None or np.all(plan_units(plan, table, inst.num_types) <= inst.max_units):
            continue
        fixed = repair(plan, table, table.rate, inst, heterps=False)
        if fixed is None:
            continue
        repaired += 1
        assert [stage[:2] for stage in fixed] == [stage[:2] for stage in plan]
        score = evaluated(inst, fixed)
        assert score["feasible"]
        assert score["cost"] >= brute_force(inst, heterps=False) * (1 - 1e-12)
    assert repaired >= 10


def test_work_bounds_hold_for_every_provisioned_stage():
    """The closed-form bounds the table's pruning uses: k_lb ≤ k and w ≤ r·τ for every stage
    the provisioning finds feasible, in every mode and stage count; inf only where none is."""
    rng = random.Random(7)
    checked = 0
    for _ in range(80):
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(1, 6), n_types=rng.randint(1, 3))
        job = dataclasses.replace(
            job, micro_batches=rng.choice([math.inf, 1, 4]), state_sharding=rng.choice(["none", "auto"])
        )
        inst = build_instance(workload, catalog, job)
        stages = rng.randint(1, 3)
        table = stage_table(inst, stages).dense()
        first, last = np.triu_indices(inst.num_layers)
        types = np.arange(inst.num_types)
        work, k_lb = work_bounds(inst, first[:, None], last[:, None], types, stages)
        rate, seconds, units = (a[first, last] for a in (table.rate, table.time, table.replicas))
        ok = np.isfinite(rate)
        assert np.all(k_lb[ok] <= units[ok]) and np.all(work[ok] <= rate[ok] * seconds[ok] * (1 + 1e-12))
        # the first, cheaper bound is below the second, and the per-stage form equals the broadcast one
        first_bound = inst.price * per_sample_seconds(inst, first, last)
        assert np.all(first_bound <= work * (1 + 1e-12))
        span, kind = np.nonzero(np.ones_like(work, bool))
        one, _ = work_bounds(inst, first[span], last[span], kind, stages)
        np.testing.assert_array_equal(one, work[span, kind])
        checked += int(ok.sum())
    assert checked >= 500


def test_an_incumbent_changes_the_time_not_the_answer():
    """Started from a feasible plan (the worst, a random one, or an infeasible or non-HeterPS
    one, which it must ignore), the solver still returns the brute-force optimum, gap 0; on
    hard generated instances (binding pooled caps) it returns what it returns without one."""
    rng = random.Random(7)
    started = 0
    for _ in range(40):
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(2, 4), n_types=rng.randint(2, 3))
        job = dataclasses.replace(job, micro_batches=rng.choice([math.inf, 2]))
        inst = build_instance(workload, catalog, job)
        plans = list(every_plan(inst.num_layers, inst.num_types, heterps=False))
        costs = [s["cost"] if s["feasible"] else -1.0 for s in (evaluated(inst, plan) for plan in plans)]
        worst = plans[int(np.argmax(costs))] if max(costs) > 0 else None
        for heterps in (False, True):
            want = brute_force(inst, heterps)
            for incumbent in (worst, rng.choice(plans), plans[-1]):
                got = solve_exact(inst, heterps=heterps, incumbent=incumbent)
                if math.isinf(want):
                    assert got.plan is None
                    continue
                started += incumbent is worst
                assert got.cost == pytest.approx(want, rel=1e-12) and got.gap == 0.0
    assert started >= 30

    import jax

    from hps.costmodel.schedule.from_params import generated_instance
    from hps.costmodel.schedule.plan import schedule_plan
    from hps.methods.search.climb_at_scale import best_single_type, climb_at_scale
    from hps.placement.env.generator import HARD_KNOBS, InstanceSplit, generate_instances

    pool = jax.device_get(
        generate_instances(jax.random.PRNGKey(4), 2, InstanceSplit("inc", 12, 16, 4, 6, **HARD_KNOBS, salt=12))
    )
    for i in range(2):
        inst = generated_instance(jax.tree.map(lambda x, i=i: x[i], pool))
        climbed, score, _ = climb_at_scale(inst, best_single_type(inst))
        plain = solve_exact(inst, heterps=True)
        warm = solve_exact(inst, heterps=True, incumbent=schedule_plan(climbed.tolist()))
        assert (plain.plan is None) == (warm.plan is None) and plain.gap == warm.gap == 0.0
        if plain.plan is not None:
            assert warm.cost == pytest.approx(plain.cost, rel=1e-9)
            assert warm.cost <= score.cost * (1 + 1e-9) if score.feasible else True


def test_a_solver_out_of_time_before_any_plan_claims_no_infeasibility():
    """With no time, the solver may stop before any plan: where a feasible plan exists it
    must then report gap inf and a bound below the optimum, not gap 0 (proven infeasible)."""
    rng = random.Random(1)
    stopped = proven_infeasible = 0
    for _ in range(30):
        workload, catalog, job = random_instance(rng, n_layers=6, n_types=3)
        inst = build_instance(workload, catalog, job)
        quick, full = solve_exact(inst, seconds=0.0), solve_exact(inst)
        if quick.plan is None and full.plan is not None:
            stopped += 1
            assert quick.gap is None and quick.bound <= full.cost * (1 + 1e-12)
        if full.plan is None:
            proven_infeasible += 1
            assert quick.plan is None and quick.gap == 0.0 and quick.bound == math.inf
        if quick.plan is not None and quick.gap == 0.0:
            assert quick.cost == pytest.approx(full.cost, rel=1e-12)
    assert stopped >= 1 and proven_infeasible >= 1


def test_exact_on_generated_instances_equals_exhaustive_search():
    """The placement env's generated instances (jnp params, float32), turned into the solver's
    numpy Instance: its HeterPS optimum equals exhaustive search's to 1e-5, gap 0."""
    from operator import itemgetter

    import jax

    from hps.costmodel.schedule.from_params import instance_from_params
    from hps.placement.env.generator import InstanceSplit, generate_instances

    pool = generate_instances(jax.random.PRNGKey(3), 40, InstanceSplit("exact-check", 4, 8, 2, 4, salt=9))
    feasible = 0
    for i in range(40):
        one = jax.device_get(jax.tree.map(itemgetter(i), pool))
        got = solve_exact(instance_from_params(one.placement, one.alpha, one.beta, one.layer_time), heterps=True)
        want = search_generated("exhaustive", jax.tree.map(itemgetter(i), pool))
        assert (got.plan is not None) == bool(want.feasible) and got.gap == 0.0
        if got.plan is not None:
            feasible += 1
            assert got.cost == pytest.approx(float(want.cost), rel=1e-5)
    assert feasible >= 30


def test_span_orders_and_least_match_plain_numpy():
    """The solver's O(N) helpers against their plain forms: the group-then-longest-time order
    is np.lexsort's up to ties (groups past 2^16 need the second radix pass), and each span's least
    value and its first holder equal a loop's."""
    from hps.methods.exact_schedule.classes import _by_group_longest_first
    from hps.methods.exact_schedule.prune import _span_least

    rng = np.random.default_rng(0)
    group = np.sort(rng.integers(0, 300_000, 50_000))
    seconds = rng.choice([0.5, 1.0, 2.0, 3.25], len(group)) * rng.choice([1.0, 1.0 + 1e-15], len(group))
    order = _by_group_longest_first(group, seconds)
    want = np.lexsort((-seconds, group))  # equal up to the order of equal times
    np.testing.assert_array_equal(np.sort(order), np.arange(len(group)))
    np.testing.assert_array_equal(group[order], group[want])
    np.testing.assert_array_equal(seconds[order], seconds[want])
    span = np.sort(rng.integers(0, 40, 200))
    values = rng.choice([1.0, 2.0, np.inf], len(span))
    least, at = _span_least(span, values, 50)
    for s in range(50):
        held = np.flatnonzero(span == s)
        want = values[held].min() if len(held) else np.inf
        assert least[s] == want and at[s] == (held[np.argmax(values[held] == want)] if len(held) else -1)


def _capped_instances(rng, count: int):
    """Random instances of up to 5 layers whose cheapest cap-free plan breaks a pooled cap."""
    while count:
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(2, 5), n_types=rng.randint(2, 3))
        inst = build_instance(workload, catalog, job)
        table = stage_table(inst, 1).dense()
        _, plan = least_rate(table.rate, table.time, None, False)
        if plan is not None and np.any(plan_units(plan, table, inst.num_types) > inst.max_units):
            count -= 1
            yield inst


def test_interval_duals_bound_every_capped_plan_from_below(monkeypatch):
    """With the pooled-cap search stopped at once, the interval duals alone answer: their bound
    is at most brute force's optimum, their plan is feasible at the cost they claim, and a
    closed certificate (gap 0) is the optimum."""
    import hps.methods.exact_schedule.solver as solver

    monkeypatch.setattr(solver, "NODE_LIMIT", 0)
    rng, closed, open_ = random.Random(11), 0, 0
    for inst in _capped_instances(rng, 40):
        for heterps in (False, True):
            want = brute_force(inst, heterps)
            result = solve_exact(inst, heterps=heterps)
            assert result.bound <= want * (1 + 1e-12)
            if result.plan is None:
                assert math.isinf(want) or result.gap is None
                continue
            score = evaluated(inst, index_plan(result.plan, inst.catalog))
            assert score["feasible"] and score["cost"] == pytest.approx(result.cost, rel=1e-12)
            assert score["cost"] >= want * (1 - 1e-12)
            if result.gap == 0:
                assert score["cost"] == pytest.approx(want, rel=1e-12)
                closed += 1
            else:
                open_ += 1
    assert closed >= 20
