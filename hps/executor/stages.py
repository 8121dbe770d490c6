"""One pipeline stage of an executed plan: its layers, its device mesh and its compiled pieces.

A stage holds the NNX layers first..last of a LayeredModel as plain param pytrees (one nnx.State
per layer) on a mesh of its d·t devices: data axes (one per network dimension the d replicas
use) and, for t > 1, the tensor axis "t" (``hps.executor.tensor``). Parameters are placed with
a ``NamedSharding`` each: tensor-parallel projections split over "t", embedding tables split by
rows over every axis, the rest replicated. The batch is sharded over the data axes (replicated
over "t"). Its compiled pieces, each a `jax.shard_map` over the stage mesh:

- forward(params, x) -> (y, residuals): per device, `jax.vjp` of the stage on its batch shard;
  the vjp's residuals come back stacked along a leading device axis, so they stay on the device
  that made them until the backward pass.
- backward(residuals, dy) -> (local grads, dx): per device, the stored vjp applied to dy. The
  gradients are the device's own (unreduced) sums; dx goes to the previous stage.
- sync(local grads) -> grads: the planned hierarchical All-Reduce over the data axes of every
  dense parameter's gradient; a sharded table's gradient rows stay where they are.
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
from hps.executor.tensor import EMBEDDING, TENSOR_AXIS, apply_layer, is_table, layer_roles, param_specs
from hps.executor.transfer import placed, to_host


@dataclass
class Stage:
    """Layers first..last (inclusive) on `type_name`: d data-parallel replicas of t devices.

    mesh / axes: the stage mesh and its data axis names (one per used network dimension; the
    mesh has "t" besides when t > 1); orders: (chunks, len(axes)) int, each gradient chunk's
    order of data axes; roles: how each layer runs (``hps.executor.tensor.layer_roles``);
    rows: per layer, the table's real row count where a sharded table was padded, else None.
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
    roles: tuple[str, ...] = ()
    rows: tuple = ()
    _treedef: dict = field(default_factory=dict)

    @property
    def tensor(self) -> int:
        return int(self.mesh.shape.get(TENSOR_AXIS, 1))

    @property
    def replicas(self) -> int:
        """d: data-parallel replicas (devices / t)."""
        return int(self.mesh.devices.size) // self.tensor

    @property
    def all_axes(self) -> tuple[str, ...]:
        return tuple(self.mesh.axis_names)

    @property
    def batch_sharding(self) -> NamedSharding:
        return NamedSharding(self.mesh, P(self.axes))

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, P())

    def specs(self) -> list:
        """Per layer, the PartitionSpec tree of its params."""
        return [param_specs(role, state, self.all_axes) for role, state in zip(self.roles, self.params)]

    def shardings(self) -> list:
        return jax.tree.map(lambda spec: NamedSharding(self.mesh, spec), self.specs())

    def host_params(self) -> list:
        """The stage's param states as the model holds them, as numpy in every process (one per
        layer; padding rows of a sharded table dropped)."""
        return [_unpadded(state, rows) for state, rows in zip(to_host(self.params), self.rows)]

    def apply(self, params, x):
        """The stage's layers in order, on this device's activation dict and param shards."""
        for graphdef, role, state in zip(self.graphdefs, self.roles, params):
            x = apply_layer(nnx.merge(graphdef, state), role, x, self.tensor, self.axes, self.all_axes)
        return x


def _padded(state, rows_multiple: int):
    """(state with its table's rows zero-padded to a multiple, the real row count)."""
    leaf = state["table"]["embedding"]
    rows = leaf.shape[0]
    pad = -rows % rows_multiple
    if pad == 0:
        return state, None
    padded = jax.tree.map(lambda v: jnp.pad(v, ((0, pad), (0, 0))), state)
    return padded, rows


def _unpadded(state, rows):
    if rows is None:
        return state
    return jax.tree.map(lambda v: v[:rows], state)


def split_float(x):
    """(floating entries, other entries) of an activation dict; an array is all floating."""
    if not isinstance(x, dict):
        return x, {}
    floating = {k: v for k, v in x.items() if jnp.issubdtype(v.dtype, jnp.floating)}
    return floating, {k: v for k, v in x.items() if k not in floating}


def build_stage(index, type_name, first, last, model, mesh, axes, orders, optimizer) -> Stage:
    """A Stage over model.layers[first..last] on `mesh` (data axes `axes`, and "t" if the mesh
    has it), each param placed by its NamedSharding (`Stage.specs`)."""
    return place_stage(layout_stage(index, type_name, first, last, model, mesh, axes, orders), optimizer)


def layout_stage(index, type_name, first, last, model, mesh, axes, orders) -> Stage:
    """The Stage before placement: its params still the model's (tables padded to a multiple
    of the device count), its roles and specs known; nothing allocated on the mesh."""
    layers = list(model.layers)[first : last + 1]
    graphdefs, params = [], []
    for layer in layers:
        graphdef, state = nnx.split(layer)
        graphdefs.append(graphdef)
        params.append(state)
    tensor = int(mesh.shape.get(TENSOR_AXIS, 1))
    roles = tuple(layer_roles(layers, tensor, int(mesh.devices.size)))
    rows = [None] * len(params)
    for i, role in enumerate(roles):
        if role == EMBEDDING:
            params[i], rows[i] = _padded(params[i], int(mesh.devices.size))
    stage = Stage(index, type_name, first, last, mesh, tuple(axes), np.asarray(orders), graphdefs, params)
    stage.roles, stage.rows = roles, tuple(rows)
    return stage


def place_stage(stage: Stage, optimizer) -> Stage:
    """The stage with its params copied onto its mesh by their shardings and its optimizer state."""
    # fresh buffers (update donates them; the model's own arrays must survive), each process
    # filling its own devices
    stage.params = placed(stage.params, stage.shardings())
    stage.opt_state = jax.jit(optimizer.init)(stage.params)
    return stage


def compile_stage(stage: Stage, optimizer: optax.GradientTransformation):
    """(forward, backward, sync, update, accumulate) jitted functions of one stage."""
    spec, every = P(stage.axes), P(stage.all_axes)
    param_spec = stage.specs()
    tables = [is_table(role, state) for role, state in zip(stage.roles, stage.params)]
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
        dense = jax.tree.map(lambda g, table: None if table else g, local, tables)
        summed = allreduce_tree(dense, stage.orders, stage.axes)
        return jax.tree.map(lambda g, table, s: g if table else s, local, tables, summed, is_leaf=lambda v: v is None)

    def update(params, opt_state, grads):
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    def accumulate(total, grads):
        return jax.tree.map(jnp.add, total, grads)

    def shard(f, in_specs, out_specs):
        return jax.jit(jax.shard_map(f, mesh=stage.mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False))

    return (
        shard(local_forward, (param_spec, spec, spec), (spec, spec, every)),
        shard(local_backward, (every, spec), (every, spec)),
        shard(local_sync, every, param_spec),
        jax.jit(update, donate_argnums=(0, 1)),
        jax.jit(accumulate, donate_argnums=(0,)),
    )
