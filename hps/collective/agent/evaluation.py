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
from hps.collective.env.env import CollectiveEnv, orders_of
from hps.collective.env.generator import CollectiveInstance, collective_instance
from hps.collective.model.orders import PERMUTATIONS, baseline_orders, themis_orders
from hps.collective.model.simulator import simulate_allreduce
from hps.config.loaders import load_network

POLICY_NAMES = ("learned", "themis", "baseline", "best-fixed")


def learned_actions(policy, params, env: CollectiveEnv, instances: CollectiveInstance):
    """(N, max_chunks) int32: the permutation the policy's greedy decoding picks for each chunk
    of each instance (leading (N,) axis; chunk counts ≤ env.max_chunks)."""
    trajectory = collective_rollout(policy, params, env, instances, jax.random.PRNGKey(0), env.max_chunks, greedy=True)
    return trajectory.final_actions


def learned_orders(policy, params, instance: CollectiveInstance, max_chunks: int = 64, *, compiler_options=None):
    """(max_chunks, D) int32 orders of one All-Reduce (an unbatched instance) under the
    policy's greedy decoding; rows ≥ C repeat the identity order."""
    batch = jax.tree.map(lambda x: jnp.asarray(x)[None], instance)
    actions = _jitted(learned_actions, policy, CollectiveEnv(max_chunks), compiler_options)(params, batch)
    return orders_of(actions[0])


def _jitted(fn, policy, env, compiler_options):
    """fn(policy, params, env, …) jitted for one policy and env (compiled once per options)."""
    return _jit_cache(fn, policy, env, tuple(sorted((compiler_options or {}).items())))


@lru_cache(maxsize=32)
def _jit_cache(fn, policy, env, options):
    return jax.jit(lambda params, instances: fn(policy, params, env, instances), compiler_options=dict(options) or None)


def _times(policy, params, env: CollectiveEnv, instances: CollectiveInstance):
    """{policy name: (N,) completion times s}. Every policy's orders go through one vmapped
    simulation: learned, Themis, baseline, then every fixed permutation (best-fixed is the
    fastest of those, as `best_fixed_orders` picks it)."""
    max_chunks, scf = env.max_chunks, env.scf
    perms = jnp.asarray(PERMUTATIONS)
    learned = jax.vmap(orders_of)(learned_actions(policy, params, env, instances))

    def one(instance, learned_orders):
        net, total, n_chunks = instance.net, instance.total_bytes, instance.n_chunks
        themis = themis_orders(net, total, n_chunks, max_chunks=max_chunks)
        fixed = jnp.broadcast_to(perms[:, None, :], (perms.shape[0], max_chunks, perms.shape[1]))
        orders = jnp.concatenate([jnp.stack([learned_orders, themis, baseline_orders(net, max_chunks)]), fixed])
        return jax.vmap(lambda o: simulate_allreduce(net, total, n_chunks, o, scf, max_chunks=max_chunks).time)(orders)

    times = jax.vmap(one)(instances, learned)
    best_fixed = jnp.min(times[:, 3:], axis=1)
    return {"learned": times[:, 0], "themis": times[:, 1], "baseline": times[:, 2], "best-fixed": best_fixed}


def evaluate_instances(
    policy, params, env: CollectiveEnv, instances: CollectiveInstance, *, compiler_options=None
) -> dict:
    """Per-instance utilization T_ideal / T (numpy (N,)) of every policy in POLICY_NAMES, and
    their means: {"utilization": {name: array}, "mean": {name: float}, "wins": fraction of
    instances where learned beats Themis by > 0.1 %, "losses": where Themis beats learned}."""
    times = jax.device_get(_jitted(_times, policy, env, compiler_options)(params, instances))
    ideal = np.asarray(instances.ideal)
    utilization = {name: ideal / np.asarray(times[name]) for name in POLICY_NAMES}
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
    for path in paths:
        network = load_network(path)
        for size in sizes:
            for count in chunks:
                names.append(f"{network.name}/{size / 2**20:g}MiB/{count}")
                instances.append(collective_instance(network, size, count))
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
