"""Stage moves: a hill climb from a given plan, for polishing the plans a policy samples.

A plan is a run of stages (consecutive layers on one type). From the current plan, one round
scores every plan one stage move away and keeps the best if it ranks strictly better:
- retype a stage's tail: layers l … (end of l's stage) go to type t (at a stage's first layer
  this retypes the whole stage; elsewhere it splits the stage and opens a new one at l);
- retype a stage's head: layers (start of l's stage) … l go to type t (l not the stage's last
  layer, which the tail move already covers); with t the neighbouring stage's type this moves
  a stage boundary.
That is at most 2·L·(T − 1) plans a round. Rounds repeat until none improves or `max_rounds`
ran. Everything is scored by the exact model (`hps.methods.search.scoring.score`), as every search is.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.costmodel.schedule.cost import SegmentTable, segment_table
from hps.costmodel.schedule.params import PlacementParams
from hps.methods.search.scoring import Scored, batch_best, better, merge, score
from hps.methods.search.single import score_single_types

MAX_ROUNDS = 16


def stage_bounds(schedule, n_layers):
    """(first, last) layer (L,) int32 of the stage each layer lies in; layers ≥ n_layers are
    outside every stage (their values are unused)."""
    idx = jnp.arange(schedule.shape[-1])
    previous = jnp.concatenate([jnp.full((1,), -1, schedule.dtype), schedule[:-1]])
    following = jnp.concatenate([schedule[1:], jnp.full((1,), -1, schedule.dtype)])
    first = jax.lax.cummax(jnp.where((idx == 0) | (schedule != previous), idx, 0))
    ends = (idx >= n_layers - 1) | (schedule != following)
    last = jax.lax.cummin(jnp.where(ends, idx, schedule.shape[-1]), reverse=True)
    return first, last


def stage_moves(schedule, n_layers, type_mask):
    """Every plan one stage move from `schedule` (L,): candidates (2·L·T, L) int32 and valid
    (2·L·T,) bool (real layer, real type, a different type, no duplicate move)."""
    n_max, n_types = schedule.shape[-1], type_mask.shape[-1]
    idx = jnp.arange(n_max)
    first, last = stage_bounds(schedule, n_layers)
    at, to, j = idx[:, None, None], jnp.arange(n_types)[None, :, None], idx[None, None, :]
    tail = jnp.where((j >= at) & (j <= last[:, None, None]), to, schedule)  # (L, T, L)
    head = jnp.where((j <= at) & (j >= first[:, None, None]), to, schedule)
    changes = (idx[:, None] < n_layers) & type_mask[None, :] & (to[..., 0] != schedule[:, None])
    head_ok = changes & (last != idx)[:, None]
    candidates = jnp.concatenate([tail.reshape(-1, n_max), head.reshape(-1, n_max)])
    return candidates.astype(jnp.int32), jnp.concatenate([changes.reshape(-1), head_ok.reshape(-1)])


@jax.jit
def refine(table: SegmentTable, params: PlacementParams, start: Scored, max_rounds: int = MAX_ROUNDS):
    """(best plan, evaluations): the hill climb from the scored plan `start`; evaluations counts
    the valid candidates scored."""
    n_layers = jnp.sum(params.layer_mask).astype(jnp.int32)

    def round_(carry):
        best, _, rounds, evaluations = carry
        candidates, valid = stage_moves(best.schedule, n_layers, params.type_mask)
        top = batch_best(score(table, params, candidates, valid=valid))
        return merge(best, top), better(top, best), rounds + 1, evaluations + jnp.sum(valid)

    def going(carry):
        _, improved, rounds, _ = carry
        return improved & (rounds < max_rounds)

    best, _, _, evaluations = jax.lax.while_loop(going, round_, (start, jnp.bool_(True), 0, jnp.int32(0)))
    return best, evaluations


def climb_from_single(params: PlacementParams, max_rounds: int = MAX_ROUNDS):
    """(best plan, evaluations): the stage-move hill climb started from the best single-type
    plan; builds the instance's segment table (the costly part, O(L²·T·K) work per instance).
    Vmappable: the teacher `hps.placement.agent.demonstrations` labels instances with."""
    table = segment_table(params)
    start = batch_best(score_single_types(table, params))
    best, evaluations = refine(table, params, start, max_rounds)
    return best, evaluations + jnp.sum(params.type_mask)
