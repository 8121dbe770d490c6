"""Single-type plans: every layer on one resource type, one plan per real type; the best wins."""

from __future__ import annotations

import jax

from hps.costmodel.schedule.cost import SegmentTable, single_type_schedules
from hps.costmodel.schedule.params import PlacementParams
from hps.methods.search.scoring import (
    Scored,
    SearchCall,
    batch_best,
    compile_and_run,
    real_sizes,
    score,
    search_method,
)


def score_single_types(table: SegmentTable, params: PlacementParams) -> Scored:
    """Scores (T,) of the single-type plans; padded types are not candidates."""
    return score(table, params, single_type_schedules(params.max_types, params.max_layers), valid=params.type_mask)


@jax.jit
def _best_single(table: SegmentTable, params: PlacementParams) -> Scored:
    return batch_best(score_single_types(table, params))


@search_method
def single(params: PlacementParams, call: SearchCall):
    """The cheapest feasible single-type plan (or the least-bad one). key and budget are unused;
    evaluations = the number of real types."""
    n_layers, n_types = real_sizes(params)
    return compile_and_run("single", _best_single, params, (), call, n_layers, n_types)
