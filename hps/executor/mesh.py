"""Stage meshes (docs/executor.md): the k devices of a stage as a jax.sharding.Mesh with one axis
per network dimension they use, so a collective order over network dimensions is an order over
mesh axes.

k units of a resource type fill its network innermost first, as the placement model assumes
(``hps.costmodel.schedule.allreduce.used_sizes``): P'_d = min(P_d, ⌈k / Π_{e<d} P'_e⌉).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from numbers import Integral

import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from hps.config.types import Network
from hps.costmodel.schedule.allreduce import used_sizes
from hps.errors import ConfigError
from hps.executor.tensor import TENSOR_AXIS


@dataclass(frozen=True)
class StageMesh:
    """A stage's mesh. axis_names[i] is network dimension dims[i] (0 = innermost); axes are in
    dimension order, so axis i of the mesh is dimension i of ``used_network``."""

    mesh: Mesh
    axis_names: tuple[str, ...]
    dims: tuple[int, ...]

    def axis_of(self, dim: int) -> int:
        """The mesh-axis index of network dimension `dim`."""
        return self.dims.index(dim)


def used_dimensions(network: Network, replicas: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(dims, sizes): the network dimensions k = `replicas` units span (P'_d > 1, innermost
    first) and their used sizes P'_d; k = 1 gives ((0,), (1,)). Raises ConfigError when
    Π P'_d ≠ k (k does not fill whole dimensions, or exceeds the network)."""
    if not isinstance(replicas, Integral) or isinstance(replicas, bool) or replicas < 1:
        raise ConfigError(f"network {network.name}", "replicas", f"must be a positive integer, got {replicas!r}")
    replicas = int(replicas)
    sizes = np.asarray(used_sizes(jnp.asarray([d.size for d in network.dimensions]), replicas)).tolist()
    if math.prod(sizes) != replicas:
        shape = "x".join(str(d.size) for d in network.dimensions)
        problem = (
            f"{replicas} units do not fill whole dimensions of the {shape} network "
            f"(innermost first they use sizes {sizes}, {math.prod(sizes)} units); "
            "use a count that fills each dimension before the next"
        )
        raise ConfigError(f"network {network.name}", "replicas", problem)
    used = [(d, p) for d, p in enumerate(sizes) if p > 1] or [(0, 1)]
    return tuple(d for d, _ in used), tuple(p for _, p in used)


def used_network(network: Network, replicas: int) -> Network:
    """The network k = `replicas` units span: its used dimensions at their used sizes P'_d, in
    dimension order (dimension j is mesh axis j of ``stage_mesh``)."""
    dims, sizes = used_dimensions(network, replicas)
    kept = tuple(replace(network.dimensions[d], size=p) for d, p in zip(dims, sizes))
    return Network(f"{network.name}[k={replicas}]", kept)


def stage_mesh(devices: Sequence, network: Network, axis_prefix: str = "d", tensor: int = 1) -> StageMesh:
    """The mesh of a stage's devices: k = len(devices) / tensor data-parallel units of one type
    on `network`, each a tensor-parallel group of `tensor` adjacent devices.

    One data axis per used dimension d, named f"{axis_prefix}{d}", in dimension order, then for
    tensor > 1 the axis "t" (``hps.executor.tensor.TENSOR_AXIS``) of size tensor; device
    devices[i_t + tensor·(i_0 + P'_0·i_1 + P'_0·P'_1·i_2 + …)] sits at mesh index
    (i_0, i_1, …, i_t), so tensor ranks, then neighbours in the innermost dimension, are adjacent
    in `devices`. `axis_names` and `dims` name the data axes only.
    """
    if len(devices) % tensor:
        raise ConfigError("tensor", "", f"{len(devices)} devices do not split into groups of {tensor}")
    dims, sizes = used_dimensions(network, len(devices) // tensor)
    grid = np.empty(len(devices), dtype=object)
    grid[:] = list(devices)
    shape = (tensor, *sizes) if tensor > 1 else sizes
    grid = grid.reshape(shape[::-1]).transpose(tuple(range(len(shape)))[::-1])
    names = tuple(f"{axis_prefix}{d}" for d in dims)
    if tensor > 1:
        grid = np.moveaxis(grid, 0, -1)
        return StageMesh(Mesh(grid, (*names, TENSOR_AXIS)), names, dims)
    return StageMesh(Mesh(grid, names), names, dims)
