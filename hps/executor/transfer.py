"""Arrays between stage meshes and the host, within one process or across the processes of a
multi-process run (docs/executor.md, "Across processes").

Every process runs the same program (multi-controller JAX): a stage's computations run on the
processes that hold its devices and are empty calls elsewhere, so every function here is called
by every process in the same order.

- `hand_off(tree, target)`: an activation (or its gradient) onto the next stage's sharding. Where
  this process holds every device of both meshes it is `jax.device_put`. Otherwise the move is
  one collective over the union U of the two meshes' devices (`exchange`): each device of the
  source puts its shard in place in a zero array of the whole value, a sum over U (gloo across
  processes on CPU) gives every device of U the whole value, and each device of the target keeps
  its slice. Sums with zeros are exact, so the value arrives bit for bit. Each such move is
  waited for before the next is dispatched: two collectives in flight at once over gloo may be
  paired in different orders by two processes, and then both wait forever.
- `to_host(tree)`: the whole value as numpy in every process (gathered over all devices).
- `placed(tree, shardings)`: host values as global arrays, each process filling its own devices.
- `per_process(values)`: a small numpy array from every process, stacked by process.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

UNION_AXIS = "u"


def hand_off(tree, target: NamedSharding):
    """`tree` (arrays, numpy or jax) with every leaf on `target`."""
    return jax.tree.map(lambda leaf: _moved(leaf, target), tree)


def _moved(x, target: NamedSharding):
    if not isinstance(x, jax.Array):
        return jax.device_put(x, target)  # host data: each process places its own devices' slices
    if x.is_fully_addressable and target.is_fully_addressable:
        return jax.device_put(x, target)
    if x.sharding.device_set == target.device_set:  # a reshard over the same devices JAX runs across processes
        return jax.block_until_ready(jax.device_put(x, target))
    return exchange(x.sharding, target, tuple(x.shape), np.dtype(x.dtype))(x)


def _union_mesh(*shardings: NamedSharding) -> Mesh:
    """A 1-D mesh over every device of `shardings`, by id (the same in every process)."""
    devices = {d for s in shardings for d in s.device_set}
    return Mesh(np.array(sorted(devices, key=lambda d: d.id)), (UNION_AXIS,))


def _starts(sharding: NamedSharding, shape: tuple[int, ...], devices) -> tuple[np.ndarray, np.ndarray]:
    """(starts (len(devices), ndim) int32: where each device's shard begins in the whole value,
    0 for devices outside `sharding`; first (len(devices),) bool: the first device in `devices`
    that holds each distinct shard)."""
    indices = sharding.devices_indices_map(shape)
    starts = np.zeros((len(devices), len(shape)), np.int32)
    first = np.zeros(len(devices), bool)
    seen = set()
    for i, device in enumerate(devices):
        if device not in indices:
            continue
        index = indices[device]
        starts[i] = [s.start or 0 for s in index]
        key = tuple((s.start, s.stop) for s in index)
        first[i] = key not in seen
        seen.add(key)
    return starts, first


@functools.lru_cache(maxsize=512)
def exchange(source: NamedSharding, target: NamedSharding, shape: tuple[int, ...], dtype: np.dtype):
    """The move of a `shape` `dtype` array from `source` to `target` (disjoint or overlapping
    device sets, on any processes) as one function of the source array."""
    union = _union_mesh(source, target)
    devices = list(union.devices.flat)
    source_starts, primary = _starts(source, shape, devices)
    target_starts, _ = _starts(target, shape, devices)
    piece, part = source.shard_shape(shape), target.shard_shape(shape)
    work = np.dtype(np.int32) if dtype == np.bool_ else dtype  # a sum needs numbers
    stacked = NamedSharding(union, P(UNION_AXIS))
    source_devices = set(source.device_set)

    def gather(shard):  # per device of U: (1, *piece) -> (1, *part)
        i = lax.axis_index(UNION_AXIS)
        at = jnp.asarray(source_starts)[i]
        whole = lax.dynamic_update_slice(jnp.zeros(shape, work), shard[0].astype(work), tuple(at))
        whole = lax.psum(jnp.where(jnp.asarray(primary)[i], whole, jnp.zeros_like(whole)), UNION_AXIS)
        mine = lax.dynamic_slice(whole, tuple(jnp.asarray(target_starts)[i]), part)
        return mine.astype(dtype)[None]

    run = jax.jit(jax.shard_map(gather, mesh=union, in_specs=P(UNION_AXIS), out_specs=P(UNION_AXIS)))
    local = [d for d in devices if d.process_index == jax.process_index()]
    target_order = [d for d in target.mesh.devices.flat if d.process_index == jax.process_index()]

    def move(x):
        held = {shard.device: shard.data for shard in x.addressable_shards}
        pieces = [
            held[d].reshape(1, *piece) if d in source_devices else jax.device_put(np.zeros((1, *piece), dtype), d)
            for d in local
        ]
        moved = run(jax.make_array_from_single_device_arrays((len(devices), *piece), stacked, pieces, dtype=dtype))
        jax.block_until_ready(moved)  # one cross-process collective in flight at a time: gloo pairs them in order
        out = {shard.device: shard.data for shard in moved.addressable_shards}
        mine = [out[d].reshape(part) for d in target_order]
        return jax.make_array_from_single_device_arrays(shape, target, mine, dtype=dtype)

    return move


def world_sharding() -> NamedSharding:
    """Replicated over every device of every process."""
    return NamedSharding(Mesh(np.array(jax.devices()), (UNION_AXIS,)), P())


def to_host(tree):
    """Every leaf's whole value as a numpy array, in every process."""

    def fetch(x):
        if not isinstance(x, jax.Array) or jax.process_count() == 1:
            return np.asarray(x)  # (across processes every process joins the gather, holder or not)
        return np.asarray(hand_off(x, world_sharding()).addressable_data(0))

    return jax.tree.map(fetch, tree)


def placed(tree, shardings):
    """Host values (one pytree, the same in every process) as global arrays on `shardings` (the
    same tree), each process filling the shards of its own devices; fresh buffers."""

    def place(value, sharding):
        host = np.asarray(value)
        return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index], dtype=host.dtype)

    return jax.tree.map(place, tree, shardings)


def per_process(values: np.ndarray) -> np.ndarray:
    """(process_count, *values.shape): `values` of each process, in every process."""
    values = np.asarray(values)
    if jax.process_count() == 1:
        return values[None]
    devices = jax.devices()
    stacked = NamedSharding(Mesh(np.array(devices), (UNION_AXIS,)), P(UNION_AXIS))
    local = [jax.device_put(values[None], d) for d in devices if d.process_index == jax.process_index()]
    whole = to_host(jax.make_array_from_single_device_arrays((len(devices), *values.shape), stacked, local))
    first = {}
    for row, device in enumerate(devices):
        first.setdefault(device.process_index, row)
    return np.stack([whole[first[p]] for p in range(jax.process_count())])
