"""All-Reduces of up to 1,024 chunks: the chunk buckets (256 rows up to 256 chunks, 1,024 rows
past), the shapes every policy pads to, `hps collective --chunks 1024` and the limit's errors."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.cli.main import main
from hps.collective.model import network_params, policy_orders, simulate_allreduce, themis_orders, utilization
from hps.collective.model.themis import collective_orders, padded_chunks
from hps.config.limits import CHUNK_BUCKETS, MAX_CHUNKS, chunks_bucket
from hps.config.loaders import load_network
from hps.config.paths import TOPOLOGIES
from hps.config.types import Job
from hps.config.validation import validate_job
from hps.costmodel.schedule import build_params, evaluate_schedules
from hps.costmodel.schedule.sensitivity import figures_of, fix_plan, plan_cost
from hps.errors import ConfigError
from tests.instances import random_instance

NETWORK = "3d-torus-4x4x4"  # a shipped 3-D network
GIB = 2**30


def shipped_network():
    return load_network(TOPOLOGIES / "networks" / f"{NETWORK}.toml")


def test_the_limit_is_1024_chunks_in_two_buckets():
    assert MAX_CHUNKS == 1024 and CHUNK_BUCKETS == (256, 1024)


def test_chunks_bucket_is_256_up_to_256_chunks_and_1024_up_to_1024():
    assert {chunks_bucket(n) for n in range(1, 257)} == {256}
    assert {chunks_bucket(n) for n in range(257, 1025)} == {1024}
    with pytest.raises(ValueError, match="1024"):
        chunks_bucket(1025)


def test_padded_chunks_of_concrete_traced_and_explicit_counts():
    assert padded_chunks(64) == padded_chunks(np.int32(64)) == padded_chunks(jnp.int32(64)) == 256
    assert padded_chunks(300) == 1024 and padded_chunks(300, 512) == 512
    traced = jax.jit(lambda n: np.zeros(padded_chunks(n)))  # a traced count: the smallest bucket
    assert jax.eval_shape(traced, 700).shape == (256,)


@pytest.mark.parametrize("policy", ["baseline", "themis", "roundrobin", "best-fixed", "explicit"])
def test_orders_of_64_chunks_keep_their_256_rows(policy):
    network = shipped_network()
    orders = policy_orders(policy, network, float(GIB), 64, orders=[2, 0, 1] if policy == "explicit" else None)
    assert orders.shape == (256, 4)


@pytest.mark.parametrize("policy", ["baseline", "themis", "roundrobin", "explicit"])
def test_orders_past_256_chunks_have_1024_rows(policy):
    network = shipped_network()
    orders = policy_orders(policy, network, float(GIB), 257, orders=[2, 0, 1] if policy == "explicit" else None)
    assert orders.shape == (1024, 4)


def test_jnp_policies_pad_to_the_bucket_of_their_chunk_count():
    net = network_params(shipped_network())
    assert themis_orders(net, float(GIB), 64).shape == (256, 4)
    assert themis_orders(net, float(GIB), 1024).shape == (1024, 4)
    assert themis_orders(net, float(GIB), 64, 16).shape == (16, 4)  # an explicit max_chunks still holds
    assert collective_orders(net.size, net.bandwidth, float(GIB), 64, True)[0].shape == (256, 4)
    result = simulate_allreduce(net, float(GIB), 64, themis_orders(net, float(GIB), 64), True)
    assert result.phase_start.shape == (256, 8)  # the simulation runs over the orders' 256 rows


def test_themis_orders_of_1024_chunks_continue_those_of_fewer_for_the_same_chunk_size():
    """The greedy's orders depend only on the chunk size and the chunks before: 1,024 chunks of
    S/1024 start with the 512 orders of an All-Reduce of S/2 in 512 chunks (the same size)."""
    net = network_params(shipped_network())
    many = np.asarray(themis_orders(net, float(GIB), 1024))
    half = np.asarray(themis_orders(net, float(GIB) / 2, 512))
    assert (many[:512] == half[:512]).all()


def test_simulate_allreduce_refuses_orders_shorter_than_max_chunks():
    net = network_params(shipped_network())
    with pytest.raises(ValueError, match="fewer than max_chunks"):
        simulate_allreduce(net, float(GIB), 300, themis_orders(net, float(GIB), 64), True, max_chunks=1024)


def test_hps_collective_with_1024_chunks_reports_the_simulated_themis_utilization(capsys):
    argv = ["collective", "--network", NETWORK, "--size", "1GiB", "--chunks", "1024", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["orders"]) == 1024
    net = network_params(shipped_network())
    result = simulate_allreduce(net, float(GIB), 1024, themis_orders(net, float(GIB), 1024), True)
    assert out["time"] == pytest.approx(float(result.time), rel=1e-6)
    assert out["utilization"] == pytest.approx(float(utilization(net, float(GIB), result.time)), rel=1e-6)
    assert 0 < out["utilization"] <= 1


@pytest.mark.parametrize("extra", [[], ["--suite"], ["--iteration", "bert-base"]])
def test_hps_collective_refuses_1025_chunks_naming_the_field(extra, capsys):
    assert main(["collective", "--network", NETWORK, "--chunks", "1025", *extra]) == 2
    err = capsys.readouterr().err
    assert "--chunks" in err and "chunks: must be between 1 and 1024, got 1025" in err and "Traceback" not in err


def test_a_job_may_ask_for_1024_chunks_but_not_1025():
    job = Job(batch=1.0, throughput=1.0, samples=1.0, chunks=1024)
    validate_job(job)
    with pytest.raises(ConfigError, match=r"chunks.*1\.\.1024, got 1025"):
        validate_job(dataclasses.replace(job, chunks=1025))


def synchronising_plan(seed: int = 0):
    """(params, padded schedule (5,)) of a feasible plan of a random 3-layer, 3-type instance in
    which some stage has k > 1 replicas and dense parameters, so its All-Reduce counts."""
    rng = random.Random(seed)
    evaluate = jax.jit(evaluate_schedules)
    while True:
        workload, catalog, job = random_instance(rng, n_layers=3, n_types=3)
        params = build_params(workload, catalog, job, max_layers=5, max_types=3, max_replicas=512)
        rows = [list(s) + [0, 0] for s in itertools.product(range(3), repeat=3)]
        result = jax.tree.map(np.asarray, evaluate(params, jnp.asarray(rows, jnp.int32)))
        syncs = (result.replicas > 1) & result.stage_end & (np.asarray(params.dense_param_bytes) > 0)
        good = np.flatnonzero(result.feasible & syncs.any(axis=1))
        if len(good):
            return params, jnp.asarray(rows[good[0]], jnp.int32)


def test_a_placement_plan_pads_its_orders_to_the_chunk_bucket_of_the_job():
    """fix_plan (hps evaluate --sensitivity) keeps 256 rows for a job of up to 256 chunks; a job
    of 300 chunks gets 1,024 rows, and the fixed plan's cost still equals the model's."""
    params, schedule = synchronising_plan()
    cost_of = jax.jit(lambda p, plan: plan_cost(figures_of(p), p, plan))
    for chunks, rows in ((64, 256), (256, 256), (300, 1024), (1024, 1024)):
        job_params = params.replace(chunks=jnp.int32(chunks))
        plan, feasible, model_cost, _ = fix_plan(job_params, schedule)
        assert plan.orders.shape == (5, rows, 4)
        if bool(feasible):
            assert float(cost_of(job_params, plan)) == pytest.approx(float(model_cost), rel=1e-5)
