"""Evaluating collective policies: the learned policy (greedy decoding) beside Themis, the
baseline order and the best fixed permutation, all simulated with the same intra-dimension
discipline, on a batch of instances (e.g. the held-out split) or the shipped topology suite.

`learned_orders` is what `hps collective --policy learned` needs: the (max_chunks, D) orders a
trained policy picks for one All-Reduce.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from hps.collective.agent.rollout import collective_rollout
from hps.collective.env.env import CollectiveEnv
from hps.collective.env.generator import CollectiveInstance, collective_instance
from hps.collective.model.batching import run_batched
from hps.collective.model.network import dims_bucket, network_params
from hps.collective.model.orders import baseline_orders, permutations, themis_orders
from hps.collective.model.simulator import simulate_allreduce
from hps.config.loaders import load_network

POLICY_NAMES = ("learned", "themis", "baseline", "best-fixed")
FIXED_BATCH = 8  # instances simulated at once when every fixed permutation is (723 each at 6 dimensions)


def learned_final_orders(policy, params, env: CollectiveEnv, instances: CollectiveInstance):
    """(N, max_chunks, D) int32: the orders the policy's greedy decoding picks for each chunk of
    each instance (leading (N,) axis; chunk counts ≤ env.max_chunks; rows past the chunk count
    are the identity)."""
    trajectory = collective_rollout(policy, params, env, instances, jax.random.PRNGKey(0), env.max_chunks, greedy=True)
    return trajectory.final_orders


def learned_orders(policy, params, instance: CollectiveInstance, max_chunks: int = 64, *, compiler_options=None):
    """(max_chunks, D) int32 orders of one All-Reduce (an unbatched instance) under the
    policy's greedy decoding; rows ≥ C are the identity order."""
    batch = jax.tree.map(lambda x: jnp.asarray(x)[None], instance)
    return _jitted(learned_final_orders, policy, CollectiveEnv(max_chunks), compiler_options)(params, batch)[0]


def _jitted(fn, policy, env, compiler_options, *static):
    """fn(policy, params, env, instances, *static) jitted for one policy and env (compiled once
    per options)."""
    return _jit_cache(fn, policy, env, tuple(sorted((compiler_options or {}).items())), static)


@lru_cache(maxsize=32)
def _jit_cache(fn, policy, env, options, static):
    return jax.jit(
        lambda params, instances: fn(policy, params, env, instances, *static), compiler_options=dict(options) or None
    )


def _times(policy, params, env: CollectiveEnv, instances: CollectiveInstance, fixed: bool = True):
    """{policy name: (N,) completion times s}. Every policy's orders go through one vmapped
    simulation: learned, Themis, baseline, then (when `fixed`) every fixed permutation of the
    D padded dimensions (best-fixed is the fastest of those, as `best_fixed_orders` picks it)."""
    max_chunks, scf = env.max_chunks, env.scf
    perms = jnp.asarray(permutations(instances.net.size.shape[-1]))
    learned = learned_final_orders(policy, params, env, instances)

    def one(instance, learned_orders):
        net, total, n_chunks = instance.net, instance.total_bytes, instance.n_chunks
        themis = themis_orders(net, total, n_chunks, max_chunks=max_chunks)
        orders = jnp.stack([learned_orders, themis, baseline_orders(net, max_chunks)])
        if fixed:
            tiled = jnp.broadcast_to(perms[:, None, :], (perms.shape[0], max_chunks, perms.shape[1]))
            orders = jnp.concatenate([orders, tiled])
        return jax.vmap(lambda o: simulate_allreduce(net, total, n_chunks, o, scf, max_chunks=max_chunks).time)(orders)

    if fixed:  # D! + 3 simulations an instance: a few instances at a time bound the memory
        times = jax.lax.map(lambda args: one(*args), (instances, learned), batch_size=FIXED_BATCH)
    else:
        times = jax.vmap(one)(instances, learned)
    named = {"learned": times[:, 0], "themis": times[:, 1], "baseline": times[:, 2]}
    if fixed:
        named["best-fixed"] = jnp.min(times[:, 3:], axis=1)
    return named


def evaluate_instances(
    policy, params, env: CollectiveEnv, instances: CollectiveInstance, *, compiler_options=None, fixed: bool = True
) -> dict:
    """Per-instance utilization T_ideal / T (numpy (N,)) of every policy in POLICY_NAMES (without
    best-fixed unless `fixed`: it simulates all D! permutations, 720 at 6 dimensions), and their
    means: {"utilization": {name: array}, "mean": {name: float}, "wins": fraction of instances
    where learned beats Themis by > 0.1 %, "losses": where Themis beats learned}."""
    jitted = _jitted(_times, policy, env, compiler_options, fixed)
    times = run_batched(lambda batch: jitted(params, batch), instances)  # parts on CPU threads, one call elsewhere
    ideal = np.asarray(instances.ideal)
    utilization = {name: ideal / np.asarray(time) for name, time in times.items()}
    learned, themis = utilization["learned"], utilization["themis"]
    return {
        "utilization": utilization,
        "mean": {name: float(np.mean(u)) for name, u in utilization.items()},
        "wins": float(np.mean(learned > themis * 1.001)),
        "losses": float(np.mean(themis > learned * 1.001)),
    }


def suite_instances(paths: Sequence, sizes: Sequence[float], chunks: Sequence[int]):
    """(names, CollectiveInstance batch): one instance per network file × size × chunk count,
    named "network/size/chunks"."""
    names, instances = [], []
    networks = [load_network(path) for path in paths]
    width = max(dims_bucket(len(network.dimensions)) for network in networks)  # one batch, one width
    for network in networks:
        for size in sizes:
            for count in chunks:
                names.append(f"{network.name}/{size / 2**20:g}MiB/{count}")
                instances.append(collective_instance(network_params(network, width), size, count))
    lanes = max(instance.net.lanes for instance in instances)  # one batch keeps one lane count
    instances = [instance.replace(net=instance.net.replace(lanes=lanes)) for instance in instances]
    return names, jax.tree.map(lambda *xs: jnp.stack(xs), *instances)


def evaluate_suite(
    policy, params, env: CollectiveEnv, paths: Sequence, sizes=(2.0**30,), chunks=(64,), *, compiler_options=None
) -> dict:
    """`evaluate_instances` on the topology suite (every network file × size × chunk count),
    plus "names" and "rows": one dict per instance with its name and each policy's utilization."""
    names, instances = suite_instances(paths, sizes, chunks)
    result = evaluate_instances(policy, params, env, instances, compiler_options=compiler_options)
    result["names"] = names
    result["rows"] = [
        {"name": name, **{p: float(result["utilization"][p][i]) for p in POLICY_NAMES}} for i, name in enumerate(names)
    ]
    return result
