"""ParallelPlanEnv: a parallel plan laid out decision by decision (docs/environments.md).

    obs, state = env.reset(key, instance)
    obs, state, reward, done, info = env.step(key, state, action, instance)

The first decision is the micro-batch b (an index into the batch's divisors); then each pipeline
stage takes four: its type, how many pipeline units (blocks) it holds (slot k: k + 1 of them; the
last slot: every unit left), its tensor-parallel level (t = 2^level) and
its data-parallel degree d (an index into the divisors, dividing b). The episode ends with the
stage that reaches the last layer; a plan has at most `max_stages` stages (the last one is made
to reach the end). The reward is 0 until then, and then the whole plan's score from the batched
scorer (`hps.costmodel.parallel.batched.score_plan_one`): −log(cost / reference) when feasible
(the reference a lower bound, so at most 0), else INFEASIBLE_REWARD less a graded penalty (the
log of how far the throughput falls short of the floor, the log of the worst stage's memory over
its limit, and 1 for any other failure).

Every decision has one action space of A = max(END_SLOTS, T, P, D) slots with a mask:
micro-batches that divide the batch (only the job's where it fixes one); types the stage's first
layer may run on, with units left under their pooled cap and a link from the previous stage's
site; unit counts within the model whose layers all run on the type (only the rest for the last
allowed stage); levels the type takes within its units left; and d dividing b within the units
left, the network's reach and the memory (one micro-batch in flight). Where a mask would allow
nothing, it allows the least harmful choice (b = 1, any type the first layer may run on, every
unit left, t = 1, d = 1), whose plan the reward then grades, as it grades what the masks cannot see (memory with more
micro-batches in flight, the floor). The observation gives each slot a row of N_FEATURES
candidate features and a context row (`ParallelObs`). State and instance are pytrees of fixed
shapes, so one compile serves every instance of a size bucket
under `vmap`; figures are float64 (run under `jax.enable_x64`), observations float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from hps.costmodel.parallel.batched import range_max, score_plan_one, stage_memory
from hps.costmodel.parallel.batched_params import Plans
from hps.placement.env.parallel_instance import ParallelInstance
from hps.rl.env import Environment

MICRO_BATCH, TYPE, END, TP, DP = range(5)
PHASES = 5
N_FEATURES = 8
N_CONTEXT = PHASES + 5
END_SLOTS = 64
"""Slots of the END decision: slot k < END_SLOTS − 1 ends the stage after its (k + 1)-th pipeline
unit (block), the last slot at the last layer."""
INFEASIBLE_REWARD = -8.0
"""The reward of an infeasible plan before its graded penalty: below any feasible plan that
costs under e^8 ≈ 3,000 times the reference (a lower bound a plan may lie far above), so a
feasible plan outranks every infeasible one on any instance a plan can be planned for."""
PENALTY_CAP = 5.0


@struct.dataclass
class ParallelState:
    """phase () int32 (MICRO_BATCH .. DP); b_index () the micro-batch's divisor slot; stage ()
    stages closed; first () the open stage's first layer; end, type, level () its choices so far;
    plan_first, plan_last, plan_type, plan_tp, plan_dp (S,) int32 the closed stages (0 past
    them); used (T,) units of each type so far; slowest () s the slowest closed stage's time per
    micro-batch."""

    phase: jnp.ndarray
    b_index: jnp.ndarray
    stage: jnp.ndarray
    first: jnp.ndarray
    end: jnp.ndarray
    type: jnp.ndarray
    level: jnp.ndarray
    plan_first: jnp.ndarray
    plan_last: jnp.ndarray
    plan_type: jnp.ndarray
    plan_tp: jnp.ndarray
    plan_dp: jnp.ndarray
    used: jnp.ndarray
    slowest: jnp.ndarray


@struct.dataclass
class ParallelObs:
    """candidates (A, N_FEATURES) float32 a row per action slot; mask (A,) bool the slots
    allowed now; context (N_CONTEXT,) float32 (the phase one-hot, the stage over max_stages, the
    work before the open stage, the slowest stage against the time budget, log2 b and log2 of
    the micro-batch count over 12)."""

    candidates: jnp.ndarray
    mask: jnp.ndarray
    context: jnp.ndarray


def _log(x):
    return jnp.log(jnp.maximum(x, 1e-30))


def _pad(values, size, fill=0.0):
    """`values` (n, …) padded (or cut) to `size` rows along axis 0."""
    n = values.shape[0]
    if n >= size:
        return values[:size]
    return jnp.concatenate([values, jnp.full((size - n, *values.shape[1:]), fill, values.dtype)])


class ParallelPlanEnv(Environment):
    """The parallel-plan MDP over padded instances; `max_stages` (static) bounds a plan's stages."""

    def __init__(self, max_stages: int = 16):
        self.max_stages = int(max_stages)

    def __eq__(self, other) -> bool:  # equal sizes make equal envs (one compile under jit)
        return isinstance(other, ParallelPlanEnv) and other.max_stages == self.max_stages

    def __hash__(self) -> int:
        return hash((ParallelPlanEnv, self.max_stages))

    @property
    def max_steps(self) -> int:
        """Decisions of the longest episode: the micro-batch and four a stage."""
        return 1 + 4 * self.max_stages

    @staticmethod
    def action_slots(instance: ParallelInstance) -> int:
        params = instance.params
        return max(END_SLOTS, params.type_mask.shape[-1], params.compute_slope.shape[-2], params.divisors.shape[-1])

    @staticmethod
    def slot_ends(state: ParallelState, instance: ParallelInstance):
        """(END_SLOTS,) the last layer of the open stage under each END slot, and whether the
        slot is one (within the model; the last slot is the last layer)."""
        cuts = jnp.cumsum(instance.cut_ok.astype(jnp.int32))  # units through layer i
        before = jnp.where(state.first > 0, cuts[jnp.maximum(state.first - 1, 0)], 0)
        n = instance.params.num_layers
        wanted = before + jnp.arange(1, END_SLOTS + 1)
        ends = jnp.searchsorted(cuts, wanted).astype(jnp.int32)  # the first layer with that many units
        within = ends <= n - 1
        last = jnp.arange(END_SLOTS) == END_SLOTS - 1
        return jnp.where(last, n - 1, jnp.minimum(ends, n - 1)).astype(jnp.int32), within | last

    def reset_env(self, key, instance: ParallelInstance) -> ParallelState:
        del key  # deterministic: the instance is the randomness
        zeros = jnp.zeros((self.max_stages,), jnp.int32)
        scalar = jnp.int32(0)
        return ParallelState(
            phase=scalar, b_index=scalar, stage=scalar, first=scalar, end=scalar, type=scalar, level=scalar,
            plan_first=zeros, plan_last=zeros, plan_type=zeros, plan_tp=zeros, plan_dp=zeros,
            used=jnp.zeros(instance.params.type_mask.shape, jnp.float64), slowest=jnp.float64(0.0),
        )  # fmt: skip

    # -- figures of the open stage -------------------------------------------------------------

    def _budget(self, state, instance):
        """(b, micro-batches M, the time per micro-batch s a plan of stage + 1 stages may take)."""
        params = instance.params
        b = instance.packed.divisors[state.b_index]
        count = params.batch / b
        return b, count, params.batch / (params.throughput_floor * (count + state.stage.astype(jnp.float64)))

    def _stage_time(self, instance, y, level, m, first, end):
        """s per micro-batch of layers first..end on type y at level, m samples a replica
        (compute, calls and the activations in and out over the NIC)."""
        packed, params = instance.packed, instance.params
        mi = jnp.clip(jnp.searchsorted(packed.divisors, m), 0, packed.divisors.shape[0] - 1)
        compute = packed.times[y, level, mi, end + 1] - packed.times[y, level, mi, first] + packed.types[y, 5]
        act_in, act_out = (
            packed.layers[first, 4],
            jnp.where(end < params.num_layers - 1, packed.layers[end + 1, 4], 0.0),
        )
        return compute + m * 2 * (act_in + act_out) / (2.0**level) * packed.types[y, 0]

    def _memory_ratio(self, instance, y, level, dp, m, first, end):
        """Bytes per device of the stage with one micro-batch in flight over the type's limit."""
        packed, params = instance.packed, instance.params
        first_a, end_a = jnp.atleast_1d(first), jnp.atleast_1d(end)
        span = packed.layers[end_a + 1, :4] - packed.layers[first_a, :4]
        peaks = range_max(params, first_a, end_a)
        static, activation, _ = stage_memory(params, span, peaks, 1.0 / 2.0**level, dp, m)
        return ((static + activation) / jnp.maximum(packed.types[y, 3], 1.0))[0]

    # -- observation ---------------------------------------------------------------------------

    def _common(self, state: ParallelState, instance: ParallelInstance) -> dict:
        """What every phase's rows read: b, the micro-batch count, the time budget, the units
        left per type, the divisors and whether they are real, the micro-batch's divisor slot."""
        params, packed = instance.params, instance.packed
        b, count, tau_star = self._budget(state, instance)
        divisors = packed.divisors
        return {
            "b": b, "count": count, "tau_star": tau_star, "divisors": divisors,
            "real": divisors <= params.batch, "n": params.num_layers,
            "cap": params.max_units.astype(jnp.float64) - state.used,
            "mi_b": jnp.clip(jnp.searchsorted(divisors, b), 0, divisors.shape[0] - 1),
        }  # fmt: skip

    def _micro_batch_rows(self, state, instance):
        c = self._common(state, instance)
        divisors, real = c["divisors"], c["real"]
        rows = jnp.stack([jnp.log2(divisors) / 12, jnp.log2(instance.params.batch / divisors) / 12], 1)
        return jnp.where(real[:, None], rows, 0.0), real & instance.micro_batch_ok, divisors == 1

    def _type_rows(self, state, instance):
        """Each type from the layers left (its span is chosen next)."""
        c = self._common(state, instance)
        params, packed, cap, n = instance.params, instance.packed, c["cap"], c["n"]
        types = jnp.arange(params.type_mask.shape[0])
        banned_first = params.banned_prefix[state.first + 1] != params.banned_prefix[state.first]
        previous = state.plan_type[jnp.maximum(state.stage - 1, 0)]
        linked = (packed.links[previous, :, 0] > 0) | (packed.links[previous, :, 3] == 0) | (state.stage == 0)
        mask = params.type_mask & ~banned_first & (cap >= 1) & linked
        left = (packed.times[:, 0, c["mi_b"], n] - packed.times[:, 0, c["mi_b"], state.first]) / c["b"]  # s a sample
        dollars = left * packed.types[:, 2]
        usable = mask & (left > 0)
        least = lambda x: jnp.min(jnp.where(usable, x, jnp.inf))  # noqa: E731
        floor = params.throughput_floor
        rows = jnp.stack([
            _log(dollars / least(dollars)), _log(left / least(left)), _log(floor * left / jnp.maximum(cap, 1)) / 4,
            jnp.log1p(jnp.maximum(cap, 0)) / 10, (types == previous) & (state.stage > 0),
        ], 1)  # fmt: skip
        return rows, mask, params.type_mask & ~banned_first

    def _end_rows(self, state, instance):
        """Each unit count of the open stage, on its type."""
        c = self._common(state, instance)
        params, packed, n, y = instance.params, instance.packed, c["n"], state.type
        layer, in_model = self.slot_ends(state, instance)
        last_stage = state.stage >= self.max_stages - 1
        rest = layer == n - 1
        first_rest = rest & (jnp.cumsum(rest) == 1)  # one slot for "every unit left"
        runs = params.banned_prefix[layer + 1, y] == params.banned_prefix[state.first, y]
        mask = in_model & (~rest | first_rest) & (~last_stage | rest) & runs
        span_work = instance.work[layer + 1] - instance.work[state.first]
        seconds = (packed.times[y, 0, c["mi_b"], layer + 1] - packed.times[y, 0, c["mi_b"], state.first]) / c["b"]
        rows = jnp.stack([
            span_work, 1 - instance.work[layer + 1], (layer - state.first + 1) / n, rest.astype(jnp.float64),
            jnp.log1p(jnp.arange(END_SLOTS)) / 5,
            _log(params.throughput_floor * seconds / jnp.maximum(c["cap"][y], 1)) / 4,
        ], 1)  # fmt: skip
        return rows, mask, rest & first_rest

    def _tp_rows(self, state, instance):
        """Each tensor-parallel level of the open stage."""
        c = self._common(state, instance)
        b, cap, y = c["b"], c["cap"], state.type
        levels = jnp.arange(instance.params.compute_slope.shape[1])
        t = 2.0**levels
        mask = instance.tp_ok[y] & (t <= cap[y])
        tau = jax.vmap(lambda p: self._stage_time(instance, y, p, b, state.first, state.end))(levels)
        memory = jax.vmap(lambda p: self._memory_ratio(instance, y, p, 1.0, b, state.first, state.end))(levels)
        rows = jnp.stack([levels / 6, _log(tau / c["tau_star"]) / 4, _log(memory) / 4, t / jnp.maximum(cap[y], 1)], 1)
        return rows, mask, levels == 0

    def _dp_rows(self, state, instance):
        """Each data-parallel degree of the open stage."""
        c = self._common(state, instance)
        params, packed, b, cap, y, level = instance.params, instance.packed, c["b"], c["cap"], state.type, state.level
        divisors, real = c["divisors"], c["real"]
        d = jnp.where(real, divisors, 1).astype(jnp.float64)
        m = b / d
        divides = real & (jnp.mod(b, d) == 0)
        reach = jnp.isfinite(packed.allreduce[y, level, :, 0])
        tau = jax.vmap(lambda mk: self._stage_time(instance, y, level, mk, state.first, state.end))(m)
        memory = jax.vmap(lambda dk, mk: self._memory_ratio(instance, y, level, dk, mk, state.first, state.end))(d, m)
        units = 2.0**level * d
        mask = divides & reach & (units <= cap[y]) & (memory <= 1.0)
        per_iteration = instance.reference * params.batch / params.samples  # the reference's $ an iteration
        stage_dollars = units * packed.types[y, 2] * tau * c["count"] / 3600.0  # this stage's, at its own pace
        rows = jnp.stack([
            _log(tau / c["tau_star"]) / 4, _log(memory) / 4, jnp.log2(units) / 12, units / jnp.maximum(cap[y], 1),
            _log(stage_dollars / per_iteration) / 4,
        ], 1)  # fmt: skip
        return rows, mask, divisors == 1

    def observation(self, state: ParallelState, instance: ParallelInstance) -> ParallelObs:
        """The observation of `state`'s own phase."""
        return self.observation_at(state.phase, state, instance)

    def observation_at(self, phase, state: ParallelState, instance: ParallelInstance) -> ParallelObs:
        """The observation of the decision `phase` (a scalar; where every env of a batch is at
        the same phase, as in a rollout whose envs started together, an unbatched `phase` makes
        this one branch, not all five). A mask that would allow nothing allows its fallback."""
        slots = self.action_slots(instance)
        branches = [self._micro_batch_rows, self._type_rows, self._end_rows, self._tp_rows, self._dp_rows]

        def padded(branch):
            def rows_of(state, instance):
                rows, mask, fallback = branch(state, instance)
                mask = jnp.where(jnp.any(mask), mask, fallback)  # the least harmful choice: the plan then fails
                rows = jnp.pad(rows, ((0, 0), (0, N_FEATURES - rows.shape[1])))
                return _pad(rows, slots), _pad(mask, slots, False)

            return rows_of

        candidates, mask = jax.lax.switch(phase, [padded(branch) for branch in branches], state, instance)
        candidates = jnp.clip(jnp.nan_to_num(candidates, nan=0.0, posinf=10.0, neginf=-10.0), -10.0, 10.0)
        b, count, tau_star = self._budget(state, instance)
        context = jnp.concatenate([
            (jnp.arange(PHASES) == phase).astype(jnp.float64),
            jnp.stack([
                state.stage / self.max_stages, instance.work[state.first],
                jnp.clip(_log(jnp.maximum(state.slowest, 1e-30) / tau_star) / 4, -10, 10) * (state.stage > 0),
                jnp.log2(b) / 12, jnp.log2(count) / 12,
            ]),
        ])  # fmt: skip
        return ParallelObs(candidates.astype(jnp.float32), mask, context.astype(jnp.float32))

    # -- transitions ---------------------------------------------------------------------------

    def step_env(self, key, state: ParallelState, action, instance: ParallelInstance):
        """Take `action` in the current phase; returns (state, reward, done, info)."""
        del key
        return self.step_at(state.phase, state, action, instance)

    def step_at(self, phase, state: ParallelState, action, instance: ParallelInstance):
        """`step_env` for an env at decision `phase` (a scalar; unbatched, the plan is scored only
        at the DP decisions, where a stage closes). info: the finished plan's "feasible",
        "cost_ratio" (cost / reference, inf when infeasible), "reason" (a code of
        `batched.REASONS`) and "plan" (`Plans` of one plan), meaningful where done."""
        a = jnp.asarray(action, jnp.int32)
        params, packed = instance.params, instance.packed
        n = params.num_layers
        b, _, _ = self._budget(state, instance)
        t = 2**state.level
        d = packed.divisors[jnp.clip(a, 0, packed.divisors.shape[0] - 1)]
        closing = phase == DP
        j = jnp.clip(state.stage, 0, self.max_stages - 1)
        at_j = jnp.arange(self.max_stages) == j
        put = lambda arr, value: jnp.where(closing & at_j, value, arr)  # noqa: E731
        tau = self._stage_time(instance, state.type, state.level, b / d, state.first, state.end)
        ends, _ = self.slot_ends(state, instance)
        new = state.replace(
            b_index=jnp.where(phase == MICRO_BATCH, a, state.b_index),
            end=jnp.where(phase == END, ends[jnp.clip(a, 0, END_SLOTS - 1)], state.end),
            type=jnp.where(phase == TYPE, a, state.type),
            level=jnp.where(phase == TP, a, state.level),
            plan_first=put(state.plan_first, state.first),
            plan_last=put(state.plan_last, state.end),
            plan_type=put(state.plan_type, state.type),
            plan_tp=put(state.plan_tp, t),
            plan_dp=put(state.plan_dp, d.astype(jnp.int32)),
            used=jnp.where(closing & (jnp.arange(state.used.shape[0]) == state.type), state.used + t * d, state.used),
            slowest=jnp.where(closing, jnp.maximum(state.slowest, tau), state.slowest),
            stage=jnp.where(closing, state.stage + 1, state.stage),
            first=jnp.where(closing, state.end + 1, state.first),
            phase=jnp.where(closing, TYPE, phase + 1),
        )
        done = closing & ((state.end >= n - 1) | (state.stage >= self.max_stages - 1))
        plan = self.plan_of(new, instance)

        def scored(plan):
            score = score_plan_one(params, packed, plan)
            feasible = score["feasible"] & score["well_formed"]
            return self.reward_of(score, instance), feasible, score["cost"] / instance.reference, score["reason"]

        def unscored(plan):
            del plan
            return jnp.float64(0.0), jnp.bool_(False), jnp.float64(jnp.inf), jnp.int32(0)

        reward, feasible, ratio, reason = jax.lax.cond(phase == DP, scored, unscored, plan)
        info = {"feasible": feasible, "cost_ratio": ratio, "reason": reason, "plan": plan}
        return new, jnp.where(done, reward, 0.0), done, info

    def plan_of(self, state: ParallelState, instance: ParallelInstance) -> Plans:
        """The closed stages of `state` as one plan (`Plans` (S,), micro_batch ())."""
        real = jnp.arange(self.max_stages) < state.stage
        b = instance.packed.divisors[state.b_index].astype(jnp.int32)
        return Plans(first=state.plan_first, last=state.plan_last, types=state.plan_type, tp=state.plan_tp,
                     dp=jnp.maximum(state.plan_dp, 1), stage_mask=real, micro_batch=b)  # fmt: skip

    @staticmethod
    def reward_of(score: dict, instance: ParallelInstance):
        """−log(cost / reference) of a feasible plan; INFEASIBLE_REWARD less the graded penalty."""
        params = instance.params
        short = jnp.clip(_log(params.throughput_floor / jnp.nan_to_num(score["throughput"], nan=0.0)), 0, PENALTY_CAP)
        ratio = score["stage_memory_bytes"] / jnp.maximum(score["stage_memory_limit_bytes"], 1.0)
        over = jnp.clip(_log(jnp.max(ratio)), 0, PENALTY_CAP)
        other = ~jnp.isin(score["reason"], jnp.array([0, 4, 7])) | ~score["well_formed"]  # not memory, not the floor
        penalty = short + over + other.astype(jnp.float64)
        feasible = score["feasible"] & score["well_formed"]
        ratio = jnp.where(feasible, score["cost"] / instance.reference, 1.0)
        return jnp.where(feasible, -jnp.log(ratio), INFEASIBLE_REWARD - penalty)
