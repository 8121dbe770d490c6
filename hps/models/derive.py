"""A layer table (`hps.config.types.Workload`) derived from any LayeredModel.

Per layer: parameter bytes from the module (`nnx.Embed` parameters sparse, the rest dense), FLOP
and bytes accessed from XLA's cost analysis of the layer's compiled forward + backward on the
activation the preceding layers produce for a sample batch, divided by the batch.

How XLA's numbers differ from the analytic tables of `hps.workloads.layers`:

- Dense layers: XLA counts each matmul as 2 m n k FLOP, forward and both backward products, as the
  analytic 3 x 2 d_in d_out does, plus what the analytic formula folds away: the bias add, ReLU,
  its backward mask and the bias-gradient sum, about 6 FLOP per output unit (2 without ReLU), so
  about 1 / d_in above the analytic number (the measured differences are in docs/results.md).
- Embedding layers: XLA counts 3 lookups dim - slots dim + 9 lookups FLOP per sample (measured:
  pooling adds, the backward scatter-add, and per-element and per-id work of the gather and
  scatter, such as bounds handling and index arithmetic) where
  the analytic table counts 3 lookups dim (pooling, scatter, the optimizer's row update, which a
  layer's vjp does not run): well above it for narrow rows, nearer for wider ones; both follow
  the lookups, not the table's rows. Bytes accessed are far above the analytic per-row traffic:
  `jax.vjp` returns the table's gradient as a dense rows x dim array (zero-filled, scatter-added),
  so each batch touches the whole table several times.
- The first layer's raw inputs get no gradient (a stage does not differentiate its data), so a
  dense first layer (the MLP's fc1) counts 2/3 of the analytic 3 x forward.
- Other layers: transformer attention and FFN rows close to the analytic ones; its input
  embedding below them (the analytic 12 FLOP per element overcounts LayerNorm); a d_out = 1
  output layer below them (XLA lowers the matrix-vector product differently).
- Parameter-free layers (concat, interaction, loss): XLA counts what the compiled ops do (e.g.
  log-softmax's max, exp, log and their backward): the softmax loss 31 FLOP per sample against
  the analytic 30 (15 per logit); concatenation 0, as in the table.
- mem_bytes is XLA's "bytes accessed": every operand and result of every fused op, weights and
  their gradients included, amortised over the batch (so it falls as the batch grows); the
  analytic tables count only per-sample activation traffic.
- io_bytes counts the raw batch as generated (int32 ids, 4 B; the analytic tables count int64
  ids, 8 B) and act_bytes every value a stage forwards (labels and ids riding along included).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from hps.config.types import Layer, Workload
from hps.config.validation import printable
from hps.models.base import Activation, LayeredModel, check_sample_batch, parameter_bytes


def derive_workload(
    model: LayeredModel, *, batch: int = 64, name: str = "derived", description: str = "", seed: int = 0
) -> Workload:
    """The layer table of `model`, per-sample numbers measured at `batch` samples of
    `model.sample_batch(jax.random.key(seed), batch)` (see the module docstring for how they differ
    from analytic ones). The workload has no job defaults; its names have their
    control characters escaped (`hps.config.validation.printable`)."""
    check_sample_batch(model, batch, "deriving the layer table")
    x = model.sample_batch(jax.random.key(seed), batch)
    io_bytes = activation_bytes(x) / batch
    rows = []
    for i, (layer_name, layer) in enumerate(zip(model.layer_names, model.layers, strict=True)):
        cost, y = forward_backward_cost(layer, x, input_gradient=i > 0)
        dense, sparse = parameter_bytes(layer)
        rows.append(
            Layer(
                name=printable(layer_name),  # a model's names are shown as a file's are
                kind="sparse" if sparse > 0 else "dense",
                flops=cost["flops"] / batch,
                mem_bytes=cost["bytes accessed"] / batch,
                io_bytes=io_bytes if i == 0 else 0.0,
                act_bytes=activation_bytes(y) / batch,
                dense_param_bytes=dense,
                sparse_param_bytes=sparse,
            )
        )
        x = y
    return Workload(name=printable(name), layers=tuple(rows), description=description)


def activation_bytes(x: Activation | jax.Array) -> float:
    """Bytes of every array in an activation (or of the loss array)."""
    return float(sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(x)))


def forward_backward_cost(
    layer: nnx.Module, x: Activation, *, input_gradient: bool = True
) -> tuple[dict[str, float], Activation | jax.Array]:
    """XLA's cost analysis ("flops", "bytes accessed", whole batch) of `layer`'s compiled forward
    and backward, and the layer's output on `x` (from running the compiled computation).

    The backward is `jax.vjp` with respect to the layer's `nnx.Param`s and, when `input_gradient`,
    the floating-point arrays of `x` (a stage's incoming activation; the first layer's raw inputs
    need none). The output cotangent is an argument, so XLA cannot fold it away.
    """
    graphdef, params, rest = nnx.split(layer, nnx.Param, ...)
    floats = {k: v for k, v in x.items() if input_gradient and jnp.issubdtype(v.dtype, jnp.floating)}
    others = {k: v for k, v in x.items() if k not in floats}

    def forward(params, floats, others):
        """(differentiable outputs, passed-through outputs: labels, ids)."""
        y = nnx.merge(graphdef, params, rest)({**floats, **others})
        if not isinstance(y, dict):
            return y, {}
        differentiable = {k: v for k, v in y.items() if jnp.issubdtype(v.dtype, jnp.floating)}
        return differentiable, {k: v for k, v in y.items() if k not in differentiable}

    def forward_backward(params, floats, others, cotangent):
        y, pullback, carried = jax.vjp(lambda p, f: forward(p, f, others), params, floats, has_aux=True)
        return y, carried, pullback(cotangent)

    shapes, _ = jax.eval_shape(forward, params, floats, others)
    cotangent = jax.tree.map(lambda s: jnp.ones(s.shape, s.dtype), shapes)
    compiled = jax.jit(forward_backward).lower(params, floats, others, cotangent).compile()
    analysis = compiled.cost_analysis() or {}
    if isinstance(analysis, list):  # older jax: one dict per computation
        analysis = analysis[0] if analysis else {}
    cost = {key: max(0.0, float(analysis.get(key, 0.0))) for key in ("flops", "bytes accessed")}
    y, carried, _ = compiled(params, floats, others, cotangent)
    return cost, ({**y, **carried} if isinstance(y, dict) else y)
