"""Per-device memory of an executed stage, checked against the catalogue before anything runs.

A device holds its share of every parameter (a replicated array whole, a split one 1/n of it
for the n devices of the mesh axes it is split over: tensor-parallel projections over "t",
embedding tables over every axis), the gradient of that share, and the optimizer's state of it
(`optimizer.init`'s bytes per parameter byte, 0 for plain SGD). Activations, the vjp residuals
of in-flight micro-batches and XLA's workspace are not counted: the check is a lower bound.
"""

from __future__ import annotations

import math

import jax

from hps.errors import StageDoesNotFit

MIB = 2**20


def share_bytes(states, specs, mesh) -> float:
    """Bytes of this device's share of the param trees `states` placed by `specs` on `mesh`."""

    def share(leaf, spec) -> float:
        split = math.prod(mesh.shape[name] for part in spec if part for name in _names(part))
        return leaf.size * leaf.dtype.itemsize / split

    return float(sum(jax.tree.leaves(jax.tree.map(share, states, specs))))


def _names(part) -> tuple[str, ...]:
    return part if isinstance(part, tuple) else (part,)


def stage_need(states, specs, mesh, optimizer) -> float:
    """Bytes per device: parameters, their gradients and the optimizer's state (module doc)."""
    params = share_bytes(states, specs, mesh)
    whole = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(states))
    state = jax.eval_shape(optimizer.init, states)
    slots = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state)) / whole if whole else 0.0
    return params * (2.0 + slots)


def check_fits(stage_name: str, type_name: str, need: float, limit: float, activations: float = 0.0) -> None:
    """StageDoesNotFit naming the stage, the need and the limit when need (parameters, gradients
    and optimizer state) or need + activations (in flight) passes limit (bytes per device)."""
    if need > limit:
        raise StageDoesNotFit(
            f"{stage_name} needs {need / MIB:.3f} MiB per device (parameters, gradients and optimizer "
            f"state) but a {type_name} has {limit / MIB:.3f} MiB"
        )
    if need + activations > limit:
        raise StageDoesNotFit(
            f"{stage_name} needs {(need + activations) / MIB:.3f} MiB per device ({need / MIB:.3f} MiB of "
            f"parameters, gradients and optimizer state, {activations / MIB:.3f} MiB of activations in flight) "
            f"but a {type_name} has {limit / MIB:.3f} MiB"
        )
