"""Hierarchical All-Reduce (docs/executor.md): inside jax.shard_map, psum_scatter over the mesh axes
in each chunk's planned order, then all_gather in reverse, equals lax.psum for every policy, mesh
shape and padding case; stage meshes fill the network innermost first; planned orders map network
dimensions to mesh axes.

Each mesh compiles one shard_map holding all of its cases, so the file stays fast.
"""

from __future__ import annotations

import itertools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import PartitionSpec as P

from hps import ConfigError
from hps.collective.model import policy_orders
from hps.config.limits import MAX_CHUNKS
from hps.config.loaders import load_catalog
from hps.config.paths import TOPOLOGIES
from hps.config.types import Dimension, Network
from hps.executor.allreduce import (
    allreduce_tree,
    hierarchical_allreduce,
    planned_orders,
)
from hps.executor.mesh import stage_mesh, used_dimensions, used_network

GiB = 2**30
POLICIES = ("baseline", "themis", "roundrobin", "best-fixed")
SHAPES = ((), (1,), (7,), (1001,), (3, 5))


def network(*sizes, bandwidths=None, name="test") -> Network:
    """A network of the given dimension sizes (innermost first), bandwidths in GiB/s (by default
    25·2^d, outer dimensions faster, so Themis and best-fixed leave the baseline order)."""
    bandwidths = bandwidths or [25.0 * 2**d for d in range(len(sizes))]
    return Network(name, tuple(Dimension(p, b * GiB, 1e-6, "ring") for p, b in zip(sizes, bandwidths)))


MESH_NETWORKS = {"2x2x2": network(2, 2, 2), "2x4": network(2, 4), "8": network(8)}


def random_orders(rng, chunks, n_axes):
    """(chunks, A) independent random permutations: an explicit schedule."""
    return np.stack([rng.permutation(n_axes) for _ in range(chunks)]).astype(np.int32)


def order_sets(net: Network, rng) -> dict[str, np.ndarray]:
    """Every policy's orders for 3 chunks (not dividing the sizes), Themis and random orders for
    64 chunks, and one random schedule of 5 chunks."""
    n_axes = len(stage_mesh(jax.devices(), net).axis_names)
    sets = {policy: planned_orders(policy, net, 8, 1e6, 3) for policy in POLICIES}
    sets["themis-64"] = planned_orders("themis", net, 8, 1e6, 64)
    sets["random-5"] = random_orders(rng, 5, n_axes)
    sets["random-64"] = random_orders(rng, 64, n_axes)
    return sets


def cases_of(net: Network, rng):
    """(label, per-device shape, orders) of every case: each order set with each shape, except
    that 64-chunk schedules run on the tiny arrays (most chunks are all padding)."""
    cases = []
    for (name, orders), shape in itertools.product(order_sets(net, rng).items(), SHAPES):
        if orders.shape[0] < 64 or int(np.prod(shape)) <= 7:
            cases.append((f"{name} {shape}", shape, orders))
    return cases


def allreduce_vs_psum(stage, cases, inputs):
    """(planned, psum) lists of global (8, *shape) results: one jitted shard_map for all cases.
    inputs: global (8, *shape) arrays, row i on the i-th device of the mesh."""
    spec = P(stage.axis_names)

    def per_device(xs):
        planned = [hierarchical_allreduce(x[0], orders, stage.axis_names)[None] for x, (_, _, orders) in zip(xs, cases)]
        return planned, [lax.psum(x, stage.axis_names) for x in xs]

    return jax.jit(jax.shard_map(per_device, mesh=stage.mesh, in_specs=(spec,), out_specs=spec))(inputs)


@pytest.mark.parametrize("mesh_name", sorted(MESH_NETWORKS))
def test_hierarchical_allreduce_equals_psum_for_every_policy_and_padding_case(mesh_name):
    """Integer-valued float32 inputs sum exactly in any order; random normal ones to 1e-6."""
    net = MESH_NETWORKS[mesh_name]
    stage = stage_mesh(jax.devices(), net)
    rng = np.random.default_rng(5)
    cases = cases_of(net, rng)
    integers = [rng.integers(-100, 100, (8, *shape)).astype(np.float32) for _, shape, _ in cases]
    normals = [rng.standard_normal((8, *shape)).astype(np.float32) for _, shape, _ in cases]
    planned, psum = allreduce_vs_psum(stage, cases + cases, integers + normals)
    n = len(cases)
    for (label, shape, _), got, want in zip(cases, planned[:n], psum[:n]):
        assert got.shape == (8, *shape) and got.dtype == jnp.float32, label
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=label)
    for (label, _, _), got, want in zip(cases, planned[n:], psum[n:]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6, err_msg=label)


def test_the_order_sets_differ_so_the_cases_exercise_several_schedules():
    """On 2×2×2 with unequal bandwidths, Themis and round-robin give chunks different orders and
    best-fixed is not the baseline order, so the equality above covers more than one order."""
    sets = order_sets(MESH_NETWORKS["2x2x2"], np.random.default_rng(0))
    assert len({tuple(row) for row in sets["themis-64"]}) > 1
    assert len({tuple(row) for row in sets["roundrobin"]}) == 3
    assert sets["best-fixed"][0].tolist() != [0, 1, 2]


def test_integer_dtypes_sum_exactly():
    """An int32 input keeps its dtype and equals psum exactly (2×4 mesh, 3 chunks, 1001 elements)."""
    stage = stage_mesh(jax.devices(), MESH_NETWORKS["2x4"])
    cases = [("int32", (1001,), np.array([[1, 0], [0, 1], [1, 0]]))]
    x = np.random.default_rng(1).integers(-(2**20), 2**20, (8, 1001)).astype(np.int32)
    (got,), (want,) = allreduce_vs_psum(stage, cases, [x])
    assert got.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_the_result_is_replicated_like_psums_so_out_specs_may_be_unsharded():
    """Like lax.psum's, the result is typed invariant over the mesh axes (all_gather to
    "invarying"), so shard_map accepts out_specs=P() for synchronised gradients."""
    stage = stage_mesh(jax.devices(), MESH_NETWORKS["2x2x2"])
    orders = np.array([[2, 0, 1], [1, 2, 0]])
    x = np.arange(8 * 5, dtype=np.float32).reshape(8, 5)
    per_device = lambda x: hierarchical_allreduce(x[0], orders, stage.axis_names)  # noqa: E731
    got = jax.jit(jax.shard_map(per_device, mesh=stage.mesh, in_specs=P(stage.axis_names), out_specs=P()))(x)
    np.testing.assert_array_equal(np.asarray(got), x.sum(axis=0))


def test_allreduce_tree_syncs_a_whole_pytree_in_one_collective():
    """A stage's gradient pytree (leaves of several shapes) equals the leafwise psum."""
    stage = stage_mesh(jax.devices(), MESH_NETWORKS["2x2x2"])
    rng = np.random.default_rng(2)
    shapes = {"dense": {"w": (8, 3, 5), "b": (8, 7)}, "scale": (8,)}
    normal = lambda shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    tree = jax.tree.map(normal, shapes, is_leaf=lambda s: isinstance(s, tuple))
    orders = planned_orders("themis", MESH_NETWORKS["2x2x2"], 8, 1e6, 4)
    spec = P(stage.axis_names)

    def per_device(t):
        local = jax.tree.map(lambda a: a[0], t)
        planned = allreduce_tree(local, orders, stage.axis_names)
        summed = jax.tree.map(lambda a: lax.psum(a, stage.axis_names), local)
        return jax.tree.map(lambda a: a[None], (planned, summed))

    planned, summed = jax.jit(jax.shard_map(per_device, mesh=stage.mesh, in_specs=(spec,), out_specs=spec))(tree)
    assert jax.tree.structure(planned) == jax.tree.structure(tree)
    for got, want in zip(jax.tree.leaves(planned), jax.tree.leaves(summed)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


def a100():
    catalog = load_catalog(TOPOLOGIES / "catalogs" / "cloud-2024.toml")
    return catalog.resources[catalog.index("a100")].network


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_stage_mesh_fills_the_innermost_catalogue_dimension_first(k):
    """a100 (8 per instance × 8 instances): up to 8 units stay inside one instance, one axis."""
    devices = jax.devices()[:k]
    stage = stage_mesh(devices, a100())
    assert stage.axis_names == ("d0",) and stage.dims == (0,)
    assert stage.mesh.shape == {"d0": k}
    assert list(stage.mesh.devices) == devices


@pytest.mark.parametrize(
    "sizes, k, dims, shape",
    [
        ((2, 2, 2), 8, (0, 1, 2), (2, 2, 2)),
        ((2, 2, 2), 4, (0, 1), (2, 2)),
        ((2, 4), 8, (0, 1), (2, 4)),
        ((2, 4, 8), 8, (0, 1), (2, 4)),  # the outer dimension is not reached
        ((1, 4, 2), 8, (1, 2), (4, 2)),  # the innermost dimension has one unit
        ((4, 4), 1, (0,), (1,)),
    ],
)
def test_stage_mesh_has_one_axis_per_used_dimension_with_innermost_neighbours_adjacent(sizes, k, dims, shape):
    """P'_d = min(P_d, ⌈k / Π_{e<d} P'_e⌉); device i_0 + P'_0·i_1 + … sits at mesh index (i_0, i_1, …)."""
    devices = jax.devices()[:k]
    stage = stage_mesh(devices, network(*sizes))
    assert stage.dims == dims and stage.axis_names == tuple(f"d{d}" for d in dims)
    assert stage.mesh.devices.shape == shape and stage.mesh.axis_names == stage.axis_names
    strides = np.cumprod((1, *shape[:-1]))
    for index in itertools.product(*map(range, shape)):
        assert stage.mesh.devices[index] == devices[int(np.dot(index, strides))]


@pytest.mark.parametrize("sizes, k", [((2, 2), 3), ((2, 2, 2), 16), ((8, 8), 12), ((2, 2), 0)])
def test_stage_mesh_rejects_a_count_that_does_not_fill_whole_dimensions(sizes, k):
    with pytest.raises(ConfigError, match="replicas"):
        used_dimensions(network(*sizes), k)


def test_stage_mesh_error_names_the_network_and_field():
    with pytest.raises(ConfigError, match=r"network test: replicas: 3 units do not fill"):
        stage_mesh(jax.devices()[:3], network(2, 2))


def test_planned_orders_map_network_dimensions_to_mesh_axes():
    """Network 1×4×2: dimension 0 is unused, so mesh axis 0 is dimension 1 and axis 1 is
    dimension 2. Themis on the used network, mapped to axes, is Themis on the whole network
    (size-1 dimensions take no part) with each dimension replaced by its axis."""
    net = network(1, 4, 2, bandwidths=[100.0, 100.0, 20.0])
    stage = stage_mesh(jax.devices(), net)
    got = planned_orders("themis", net, 8, 1e6, 16)
    whole = np.asarray(policy_orders("themis", net, 1e6, 16))[:16]
    want = [[stage.axis_of(d) for d in row if d in stage.dims] for row in whole.tolist()]
    assert got.tolist() == want
    assert len({tuple(row) for row in want}) > 1  # not every chunk in one order


def test_planned_orders_use_only_the_dimensions_the_replicas_reach():
    """Network 2×4×8 with k = 8: orders cover the two inner dimensions (mesh axes 0, 1)."""
    net = network(2, 4, 8)
    for policy in POLICIES:
        orders = planned_orders(policy, net, 8, 1e6, 5)
        assert orders.shape == (5, 2) and orders.dtype == np.int32
        assert (np.sort(orders, axis=1) == [0, 1]).all(), policy
    inner, middle, _ = net.dimensions
    assert used_network(net, 8).dimensions == (inner, middle)


def test_planned_orders_for_one_replica_or_one_axis_are_the_only_order():
    assert planned_orders("themis", network(4, 4), np.int64(1), 1e6, np.int32(3)).tolist() == [[0]] * 3
    assert planned_orders("best-fixed", network(8, 8), 8, 1e6, 2).tolist() == [[0]] * 2


def test_planned_learned_orders_come_from_the_checkpoint_loader_on_the_used_network():
    """`learned` asks the caller's loader (as `hps execute` passes `checkpoint_orders`) for the
    network the replicas span; its padded orders map to mesh axes."""
    seen = {}

    def fake(checkpoint, net, size, chunks):
        seen.update(checkpoint=checkpoint, sizes=[d.size for d in net.dimensions], size=size, chunks=chunks)
        return np.tile(np.array([2, 1, 3, 0], np.int32), (64, 1))

    orders = planned_orders("learned", network(2, 2, 2, 2), 8, 4e6, 3, learned_orders=partial(fake, "runs/c"))
    assert orders.tolist() == [[2, 1, 0]] * 3
    assert seen == {"checkpoint": "runs/c", "sizes": [2, 2, 2], "size": 4e6, "chunks": 3}


@pytest.mark.parametrize(
    "policy, chunks, field",
    [
        ("nope", 3, "policy"),
        ("explicit", 3, "policy"),
        ("learned", 3, "checkpoint"),
        ("themis", 0, "chunks"),
        ("themis", MAX_CHUNKS + 1, "chunks"),
    ],
)
def test_planned_orders_reject_bad_input_with_a_config_error(policy, chunks, field):
    with pytest.raises(ConfigError, match=field):
        planned_orders(policy, network(2, 2), 4, 1e6, chunks)


def test_hierarchical_allreduce_rejects_orders_that_are_not_permutations():
    with pytest.raises(ValueError, match="permutation"):
        hierarchical_allreduce(jnp.zeros(4), np.array([[0, 0]]), ("d0", "d1"))
    with pytest.raises(ValueError, match="shape"):
        hierarchical_allreduce(jnp.zeros(4), np.array([0, 1]), ("d0", "d1"))
