"""The environment batch sharded over devices: a 1-D mesh ("envs",) and constraints on it.

Parameters, optimizer state and scalars stay replicated; every per-env array (instances, env
states, trajectories) is split along its env axis, so each device runs its share of the envs
and XLA all-reduces the gradients. The same code runs on 1 CPU, 8 fake CPU devices or a GPU.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec, Sharding

from hps.errors import ConfigError

ENV_AXIS = "envs"


def env_mesh(devices=None) -> Mesh:
    """A 1-D mesh named ("envs",) over `devices` (default: all devices)."""
    devices = list(devices) if devices is not None else jax.devices()
    return jax.make_mesh((len(devices),), (ENV_AXIS,), axis_types=(AxisType.Auto,), devices=devices)


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def env_sharding(mesh: Mesh, ndim: int, axis: int = 0) -> NamedSharding:
    """Split axis `axis` of an ndim-dimensional array over the env axis."""
    spec = [None] * ndim
    spec[axis] = ENV_AXIS
    return NamedSharding(mesh, PartitionSpec(*spec))


def env_shardings(tree, mesh: Mesh):
    """Shardings (for `jax.device_put`) splitting every leaf of `tree` along its leading axis."""
    return jax.tree.map(lambda x: env_sharding(mesh, x.ndim), tree)


def put_alike(tree, shardings):
    """`jax.device_put(tree, shardings)` of values every process computes alike (from the same
    seed or key). Across processes device_put checks that each leaf is equal everywhere: one
    all-gather program per leaf, a second or more per chunk for a generated instance pool's
    leaves. Here each process places its own copy's shards instead; in one process it is
    device_put."""
    if jax.process_count() == 1:
        return jax.device_put(tree, shardings)

    def place(x, sharding):
        host = np.asarray(x)
        return jax.make_array_from_callback(host.shape, sharding, lambda index: np.asarray(host[index]))

    if isinstance(shardings, Sharding):
        return jax.tree.map(lambda x: place(x, shardings), tree)
    return jax.tree.map(place, tree, shardings)


def shard_envs(tree, mesh: Mesh, axis: int = 0):
    """Constrain every array leaf of `tree` (inside jit) to be split along `axis` over envs."""
    return jax.tree.map(lambda x: jax.lax.with_sharding_constraint(x, env_sharding(mesh, x.ndim, axis)), tree)


def check_divisible(count: int, mesh: Mesh, what: str) -> None:
    """ConfigError unless `count` splits evenly over the mesh's devices."""
    if count % mesh.size:
        raise ConfigError("config", what, f"must be a multiple of the device count {mesh.size}, got {count}")
