"""Envs grouped by instance: N = I × samples envs, each instance played by `samples` of them.

Per-instance values (observation features, the policy's encoding) have a leading (I,) axis and
are computed once; per-env values (env states, actions, decoder states) have a leading (N,)
axis, env n playing instance n // samples.
"""

from __future__ import annotations

import jax


def over_envs(fn, kinds: tuple, samples: int):
    """`fn` vmapped over N = I × samples envs. kinds gives each argument's batching: "env" (a
    leading (N,) axis), "instance" (a leading (I,) axis, shared by the instance's envs) or None
    (not batched). Outputs have a leading (N,) axis."""
    inner = jax.vmap(fn, in_axes=tuple(0 if kind == "env" else None for kind in kinds))
    outer = jax.vmap(inner, in_axes=tuple(None if kind is None else 0 for kind in kinds))
    grouped = lambda x: x.reshape(-1, samples, *x.shape[1:])  # noqa: E731

    def call(*args):
        args = [jax.tree.map(grouped, arg) if kind == "env" else arg for arg, kind in zip(args, kinds)]
        return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), outer(*args))

    return call
