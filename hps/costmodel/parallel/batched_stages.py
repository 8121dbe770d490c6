"""The figures of many stages of one instance in one jitted call, from the batched scorer's pieces
(`hps.costmodel.parallel.batched`: `pack`, `range_max`, `stage_memory`, `exposed_sync`,
`zero3_gather`): the JAX twin of `stages.stage_arrays`, equal to it to rounding, for the exact
solver's stage tables (`StageTable(..., figures=StageFigures(problem))`).

A call takes N stages (first, last, type, t, d) under one micro-batch b, padded to a power of two
(at least `LEAST_PAD`) so that the compiled programs are few; float64 under `jax.enable_x64`.
Layers with measured times are not taken (`plan_params` refuses them).
"""

from __future__ import annotations

import numpy as np

from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.stages import StageArrays

LEAST_PAD = 4096
"""The fewest stages a call is padded to."""


def _figures(params, packed, first, last, types, tp, dp, b):
    """(time, boundary, tail, sync, static, activation) (N,) of stages of one instance."""
    import jax.numpy as jnp

    from hps.costmodel.parallel import batched

    n_layers = params.num_layers
    level = batched.floor_log2(tp)
    inv_tp = 1 / tp.astype(jnp.float64)  # exact: t is a power of two
    dpf = dp.astype(jnp.float64)
    m = b / dpf  # exact: d divides b
    divisors = packed.divisors
    mi = jnp.minimum(jnp.searchsorted(divisors, m), divisors.shape[0] - 1)
    di = jnp.minimum(jnp.searchsorted(divisors, dpf), divisors.shape[0] - 1)
    low, high = packed.layers[first], packed.layers[last + 1]
    inv_nic, inv_mem_bw, call_s = packed.types[types, 0], packed.types[types, 1], packed.types[types, 5]
    compute = packed.times[types, level, mi, last + 1] - packed.times[types, level, mi, first] + call_s
    a_out = jnp.where(last < n_layers - 1, high[:, 4], 0.0)
    boundary = m * 2 * (low[:, 4] + a_out) * inv_tp * inv_nic
    span = high[:, :4] - low[:, :4]
    static, activation, states = batched.stage_memory(
        params, span, batched.range_max(params, first, last), inv_tp, dpf, m
    )
    alpha, beta = packed.allreduce[types, level, di, 0], packed.allreduce[types, level, di, 1]
    sync = batched.exposed_sync(params, span[:, 0] * params.state_bytes[1] * inv_tp, alpha, beta, dpf, compute)
    gather = batched.zero3_gather(params, span[:, 0] * params.state_bytes[0] * inv_tp, alpha, beta, dpf)
    time = jnp.maximum(compute, gather) + boundary
    tail = sync + 2 * states * inv_mem_bw
    return time, boundary, tail, sync, static, activation


class StageFigures:
    """`stage_arrays` of one problem by the batched scorer's code: the instance's packed tables
    built once (`plan_params` at the least bucket that holds it), then one jitted call per batch of
    stages. ValueError where the problem has measured layer times."""

    def __init__(self, problem: ParallelProblem):
        import jax

        from hps.costmodel.parallel import batched
        from hps.costmodel.parallel.batched_params import bucket_for, plan_params

        self.problem = problem
        bucket = bucket_for(
            problem, tp_levels=max(1, max(max(problem.tp_choices(y)) for y in range(problem.num_types)).bit_length())
        )
        with jax.enable_x64(True):
            self.params = jax.device_put(plan_params(problem, bucket))
            self.packed = jax.jit(batched.pack)(self.params)
            self._call = jax.jit(_figures)

    def __call__(self, b: int, first, last, types, tp, dp) -> StageArrays:
        """The StageArrays of N stages (first, last, types, tp, dp: (N,) ints) under micro-batch b."""
        import jax

        n = len(first)
        size = max(LEAST_PAD, 1 << max(0, (n - 1).bit_length()))
        columns = [np.zeros(size, np.int32) for _ in range(5)]
        for column, values, fill in zip(columns, (first, last, types, tp, dp), (0, 0, 0, 1, 1)):
            column[:n], column[n:] = values, fill
        with jax.enable_x64(True):
            out = self._call(self.params, self.packed, *columns, np.float64(b))
            time, boundary, tail, sync, static, activation = (np.asarray(x)[:n] for x in out)
        units = np.asarray(tp, np.int64) * np.asarray(dp, np.int64)
        rate = units * self.problem.price[np.asarray(types, np.int64)]
        return StageArrays(time, boundary, tail, sync, static, activation, units, rate)
