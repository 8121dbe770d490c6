"""One pipeline stage of an executed plan: its layers, its device mesh and its compiled pieces.

A stage holds the NNX layers first..last of a LayeredModel as plain param pytrees (one nnx.State
per layer), replicated on a mesh of its k devices; the batch is sharded over all mesh axes. Its
compiled pieces, each a `jax.shard_map` over the stage mesh:

- forward(params, x) -> (y, residuals): per device, `jax.vjp` of the stage on its batch shard;
  the vjp's residuals come back stacked along a leading device axis, so they stay on the device
  that made them until the backward pass.
- backward(residuals, dy) -> (local grads, dx): per device, the stored vjp applied to dy. The
  gradients are the device's own (unreduced) sums; dx goes to the previous stage.
- sync(local grads) -> grads: the planned hierarchical All-Reduce, replicated result.
- update(params, opt_state, grads): the optax step.

Activations are dicts (see hps.models.base); only their floating-point entries are
differentiated, integer ones (ids, labels) ride along.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from hps.executor.allreduce import allreduce_tree


@dataclass
class Stage:
    """Layers first..last (inclusive) on `type_name`, k = len(devices) replicas.

    mesh / axes: the stage mesh and its axis names (one per used network dimension);
    orders: (chunks, len(axes)) int, each gradient chunk's order of mesh axes.
    """

    index: int
    type_name: str
    first: int
    last: int
    mesh: jax.sharding.Mesh
    axes: tuple[str, ...]
    orders: np.ndarray
    graphdefs: list
    params: list
    opt_state: object = None
    _treedef: dict = field(default_factory=dict)

    @property
    def replicas(self) -> int:
        return int(self.mesh.devices.size)

    @property
    def batch_sharding(self) -> NamedSharding:
        return NamedSharding(self.mesh, P(self.axes))

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, P())

    def apply(self, params, x):
        """The stage's layers in order, on a (local) activation dict."""
        for graphdef, state in zip(self.graphdefs, params):
            x = nnx.merge(graphdef, state)(x)
        return x


def split_float(x):
    """(floating entries, other entries) of an activation dict; an array is all floating."""
    if not isinstance(x, dict):
        return x, {}
    floating = {k: v for k, v in x.items() if jnp.issubdtype(v.dtype, jnp.floating)}
    return floating, {k: v for k, v in x.items() if k not in floating}


def build_stage(index, type_name, first, last, model, mesh, axes, orders, optimizer) -> Stage:
    """A Stage over model.layers[first..last], params placed replicated on `mesh`."""
    graphdefs, params = [], []
    for layer in list(model.layers)[first : last + 1]:
        graphdef, state = nnx.split(layer)
        graphdefs.append(graphdef)
        params.append(state)
    stage = Stage(index, type_name, first, last, mesh, tuple(axes), np.asarray(orders), graphdefs, params)
    # fresh buffers (update donates them; the model's own arrays must survive)
    stage.params = jax.jit(lambda tree: jax.tree.map(jnp.copy, tree), out_shardings=stage.replicated)(params)
    stage.opt_state = jax.jit(optimizer.init, out_shardings=stage.replicated)(stage.params)
    return stage


def compile_stage(stage: Stage, optimizer: optax.GradientTransformation):
    """(forward, backward, sync, update, accumulate) jitted functions of one stage."""
    spec = P(stage.axes)
    differentiate_input = stage.first > 0

    def local_forward(params, x_float, x_other):
        def run(p, xf):
            return split_float(stage.apply(p, {**xf, **x_other}))

        if differentiate_input:
            y, vjp_fn, y_other = jax.vjp(run, params, x_float, has_aux=True)
        else:
            y, vjp_fn, y_other = jax.vjp(lambda p: run(p, x_float), params, has_aux=True)
        leaves, stage._treedef["vjp"] = jax.tree.flatten(vjp_fn)
        return y, y_other, [leaf[None] for leaf in leaves]

    def local_backward(residuals, dy):
        vjp_fn = jax.tree.unflatten(stage._treedef["vjp"], [r[0] for r in residuals])
        grads = vjp_fn(dy)
        param_grads = grads[0]
        dx = grads[1] if differentiate_input else {}
        return jax.tree.map(lambda g: g[None], param_grads), dx

    def local_sync(stacked):
        local = jax.tree.map(lambda g: g[0], stacked)
        if stage.replicas == 1:
            return local  # one replica: nothing to synchronise (the model's sync term is 0 too)
        return allreduce_tree(local, stage.orders, stage.axes)

    def update(params, opt_state, grads):
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    def accumulate(total, grads):
        return jax.tree.map(jnp.add, total, grads)

    def shard(f, in_specs, out_specs):
        return jax.jit(jax.shard_map(f, mesh=stage.mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False))

    return (
        shard(local_forward, (P(), spec, spec), spec),
        shard(local_backward, spec, spec),
        shard(local_sync, spec, P()),
        jax.jit(update, donate_argnums=(0, 1)),
        jax.jit(accumulate, donate_argnums=(0,)),
    )
