"""Flax NNX policy modules as plain parameter pytrees: their structure without their arrays.

A policy's pure functions merge a parameter dict back into the module's static structure
(`nnx.split`'s graphdef) inside each call. Building the module to get that structure runs every
initialiser op by op; `nnx.eval_shape` builds it abstractly, with no arrays and nothing to
compile, and yields the same graphdef.
"""

from __future__ import annotations

from flax import nnx


def module_graphdef(module_type, spec) -> nnx.GraphDef:
    """The graphdef of module_type(spec, rngs=...), built abstractly."""
    graphdef, _ = nnx.split(nnx.eval_shape(lambda: module_type(spec, rngs=nnx.Rngs(0))))
    return graphdef
