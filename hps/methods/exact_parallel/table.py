"""Every stage a parallel plan can use under one micro-batch b, and the dynamic program over them.

A stage is (span, option): a span is (first, last) with its first layer at 0 or after a layer where
cuts may fall, and its last layer where a cut may fall or at L − 1; an option is (type, t, d)
with t a power of two within the type's limit, d dividing b and t·d within the type's units.
Each entry keeps its time per micro-batch τ, tail φ, $/hour r, and the most activation chunks
f_max it can hold in flight within the type's memory less its headroom, a chunk being 1/v of a
micro-batch's activations (v the job's virtual stages): a stage q stages from the end of S holds
min(q, M) micro-batches under plain 1F1B, min(2(q − 1) + (v − 1)S + 1, M·v) chunks interleaved
(`hps.costmodel.parallel.pipeline.in_flight_chunks`).
"""

from __future__ import annotations

import copy

import numpy as np

from hps.contract.memory import refuse_past_memory
from hps.costmodel.parallel.pipeline import in_flight_chunks
from hps.costmodel.parallel.problem import ParallelProblem, divisors
from hps.costmodel.parallel.stages import stage_arrays, stage_memory

CANDIDATE_BYTES = 240
"""Peak bytes per (span, option) candidate while the table is built (about thirty float64 and
int64 arrays over the candidates)."""


def _prefix_argmin(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Within each run of equal `group` (sorted), the position of the least of `values` strictly
    before each position (−1 at a run's start); exact, on integer codes."""
    n = len(values)
    rank = np.unique(values, return_inverse=True)[1].astype(np.int64)
    code = rank * (n + 1) + np.arange(n)  # least value first, then earliest position
    top = int(code.max()) + 2 if n else 2
    shifted = code - group * top  # later runs sit below earlier ones, so a running min restarts
    running = np.minimum.accumulate(np.concatenate([[np.iinfo(np.int64).max], shifted[:-1]]))
    start = np.concatenate([[True], group[1:] != group[:-1]]) if n else np.zeros(0, bool)
    before = running + group * top
    return np.where(start | (before >= top), -1, before % (n + 1))


def _undominated(group, fits, rate, time, tail) -> np.ndarray:
    """Indices of the entries that no single cheaper-or-equal entry of the same (span, type)
    group and in-flight count (so no more units of that type, the same site) beats on both τ
    and φ (tested against the earlier entry of least τ and the one of least φ): the least-rate
    program never needs the others."""
    key = np.unique(group * (fits.max() + 1 if len(fits) else 1) + fits, return_inverse=True)[1].astype(np.int64)
    order = np.lexsort((tail, time, rate, key))
    k, t, p = key[order], time[order], tail[order]
    dominated = np.zeros(len(order), bool)
    for best in (_prefix_argmin(t, k), _prefix_argmin(p, k)):
        has = best >= 0
        j = np.maximum(best, 0)
        dominated |= has & (t[j] <= t) & (p[j] <= p)
    return np.sort(order[~dominated])


def _lex_argmin(primary: np.ndarray, secondary: np.ndarray, axis: int) -> np.ndarray:
    """argmin of `primary` along `axis`, ties (to 1e-12 relative) broken by the least `secondary`."""
    least = primary.min(axis=axis, keepdims=True)
    tied = primary <= least + 1e-12 * np.abs(np.where(np.isfinite(least), least, 0))
    return np.where(tied, secondary, np.inf).argmin(axis=axis)


class TableUnfinished(Exception):
    """A deadline passed while a stage table was built."""


class StageTable:
    """The stages of `problem` under micro-batch b, and the least-rate dynamic program."""

    def __init__(self, problem: ParallelProblem, b: int, deadline=None):
        """`deadline`: anything with `passed()`, checked between types (TableUnfinished)."""
        self.problem, self.b = problem, b
        n = problem.num_layers
        self.micro_batches = int(problem.job.batch) // b
        cuts = np.flatnonzero(problem.cut_after[:-1])
        self.starts = np.concatenate([[0], cuts + 1]).astype(np.int64)  # boundaries a stage may start at
        ends = np.concatenate([cuts, [n - 1]]).astype(np.int64)
        first, last = np.meshgrid(self.starts, ends, indexing="ij")
        keep = first <= last
        self.span_first, self.span_last = first[keep], last[keep]
        self.max_stages = len(self.starts)
        self.v = problem.virtual_stages
        self.depth = self.most_chunks(self.max_stages)  # the most chunks any plan's stage holds
        options = []
        for y in range(problem.num_types):
            most = problem.catalog.resources[y].max_units
            for t in problem.tp_choices(y):
                reach = len(problem.dp_allreduce(y, t)[0])
                options += [(y, t, d) for d in divisors(b) if t * d <= most and d <= reach]
        self.options = np.array(options, np.int64).reshape(-1, 3)
        refuse_past_memory(
            f"the stage table of {len(self.span_first):,} spans x {len(self.options):,} options (micro-batch {b})",
            CANDIDATE_BYTES * len(self.span_first) * len(self.options),
        )
        # spans are first-major: those starting at boundary k are a contiguous range, ending at
        # ends[k:], so the boundaries after them are k + 1 … len(starts)
        low = np.searchsorted(self.span_first, self.starts)
        self._spans_at = [slice(int(a), int(z)) for a, z in zip(low, [*low[1:], len(self.span_first)])]
        self._after_at = [slice(k + 1, len(self.starts) + 1) for k in range(len(self.starts))]
        self._build(deadline)

    def most_chunks(self, stages: int) -> int:
        """The most activation chunks a stage of a plan of at most `stages` stages holds (the
        first stage of a plan of `stages`)."""
        return int(in_flight_chunks(0, stages, self.micro_batches, self.v))

    def needs(self, q_max: int, stages: int | None = None) -> np.ndarray:
        """(q_max + 1,) the chunks a stage q stages from the end holds (q = 0: none). Interleaved
        (v > 1) the count depends on the plan's stage count `stages`; None gives one chunk for
        every q, which no plan needs less of (a relaxation, for bounds)."""
        q = np.arange(q_max + 1)
        if self.v > 1 and stages is None:
            return np.minimum(q, 1)
        count = q_max if stages is None else stages  # plain 1F1B: the same for every stage count
        return np.where(q > 0, in_flight_chunks(count - q, count, self.micro_batches, self.v), 0)

    def _build(self, deadline) -> None:
        """The entries, type by type (dominance is within a type), in (span, option) order;
        TableUnfinished where `deadline` (anything with `passed()`) passes between types."""
        parts = []
        for y in range(self.problem.num_types):
            if deadline is not None and deadline.passed():
                raise TableUnfinished(f"the stage table of micro-batch {self.b} was left unfinished at its deadline")
            parts.append(self._entries(np.flatnonzero(self.options[:, 0] == y)))
        span, opt, f, time, tail, rate, units = (np.concatenate(column) for column in zip(*parts))
        order = np.lexsort((opt, span))
        self.entry_span, self.entry_opt = span[order], opt[order]
        self.time, self.tail, self.rate = time[order], tail[order], rate[order]
        self.fits = f[order].astype(np.int64)
        self.site = self.problem.type_site[self.options[self.entry_opt, 0]]
        self.units = units[order]
        self._group_cache = {}
        self.compacted_to = self.depth

    def _entries(self, options: np.ndarray):
        """(span, option, in-flight count, τ, φ, $/hour, units) of the undominated entries of
        `options` (indices into self.options, one type), in (span, option) order."""
        problem, b = self.problem, self.b
        n_spans, n_opt = len(self.span_first), len(options)
        span = np.repeat(np.arange(n_spans), n_opt)
        opt = np.tile(options, n_spans)
        ok = problem.span_allowed(self.span_first[span], self.span_last[span], self.options[opt, 0])
        ok &= problem.splits(self.span_first[span], self.span_last[span])
        span, opt = span[ok], opt[ok]
        y, t, d = (self.options[opt, i] for i in range(3))
        v = self.v
        static, activation, _ = stage_memory(problem, b, self.span_first[span], self.span_last[span], t, d)
        ok = static + activation / v <= problem.memory_limit[y]  # one chunk in flight fits
        span, opt, y, t, d = span[ok], opt[ok], y[ok], t[ok], d[ok]
        arrays = stage_arrays(problem, b, self.span_first[span], self.span_last[span], y, t, d)
        memory = problem.memory_limit[y]
        room = memory - arrays.static_memory
        with np.errstate(divide="ignore", invalid="ignore"):
            fits = np.where(arrays.activation_memory > 0, np.floor(room * v / arrays.activation_memory), np.inf)
        fits = np.where(room >= 0, fits, -1)
        # floor() may be one off where static + f·act/v lands on the limit: check as score_plan does
        f = np.clip(fits, 0, self.depth)
        over = arrays.memory(f / v) > memory
        f = np.where(over & (f >= 1), f - 1, f)
        keep = np.flatnonzero(f >= 1)
        keep = keep[_undominated(span[keep] * problem.num_types + y[keep], f[keep],
                                 arrays.rate[keep], arrays.time[keep], arrays.tail[keep])]  # fmt: skip
        columns = (span, opt, f, arrays.time, arrays.tail, arrays.rate, arrays.units)
        return tuple(column[keep] for column in columns)

    def compact(self, most: int) -> None:
        """Drop the entries no plan of at most `most` stages needs (in-flight counts above what
        such plans hold no longer tell entries apart). Entry indices change: solutions cached
        before are void."""
        f = np.minimum(self.fits, self.most_chunks(most))
        y = self.options[self.entry_opt, 0]
        keep = _undominated(self.entry_span * self.problem.num_types + y, f, self.rate, self.time, self.tail)
        for name in ("entry_span", "entry_opt", "time", "tail", "rate", "fits", "site", "units"):
            setattr(self, name, getattr(self, name)[keep])
        self._group_cache = {}
        self.compacted_to = most

    def priced_for(self, problem: ParallelProblem) -> StageTable:
        """This table for `problem`, which differs from the one it was built for at most in the
        throughput floor and the types' prices (`SharedTables` checks that): the entries, τ, φ,
        in-flight counts and units do not depend on either (dominance is compared within one
        type, whose price scales every rate alike); only the rates are priced anew."""
        out = copy.copy(self)
        out.problem = problem
        out.rate = self.units * problem.price[self.options[self.entry_opt, 0]]
        out._group_cache = {}
        return out

    def stage(self, entry: int) -> tuple[int, int, int, int, int]:
        """(first, last, type, t, d) of an entry."""
        s, o = self.entry_span[entry], self.entry_opt[entry]
        y, t, d = self.options[o]
        return int(self.span_first[s]), int(self.span_last[s]), int(y), int(t), int(d)

    def _groups(self, most: int):
        """(order, group starts, group keys, τ, φ) of the entries sorted by (in-flight count
        clipped to `most`, span, site, rate, τ), with τ and φ in that order; a group's key is its
        flat index in a (most + 1, spans, sites) array; cached."""
        if most in self._group_cache:
            return self._group_cache[most]
        n_spans, n_sites = len(self.span_first), len(self.problem.sites)
        key = (np.minimum(self.fits, most) * n_spans + self.entry_span) * n_sites + self.site
        order = np.lexsort((self.time, self.rate, key))
        starts = np.flatnonzero(np.concatenate([[len(key) > 0], key[order][1:] != key[order][:-1]]))
        self._group_cache[most] = (order, starts, key[order][starts], self.time[order], self.tail[order])
        return self._group_cache[most]

    def cheapest(
        self, theta: float, phi: float, weight: np.ndarray | None = None, most: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(weight, τ, entry), each (f_max + 1, spans, sites) with f_max = min(depth, most): the
        least weight ($/hour unless given) of an entry with τ ≤ theta and φ ≤ phi of each span
        and site that holds at least f chunks in flight, its τ (s) and index (−1, weight
        and τ inf: none); ties: the least τ (with a weight, the least rate, then τ), then the
        fewest in flight."""
        n_spans, n_sites = len(self.span_first), len(self.problem.sites)
        f_max = min(self.depth, most or self.depth)
        order, starts, keys, time_sorted, tail_sorted = self._groups(f_max)
        values = self.rate if weight is None else weight
        allowed = (time_sorted <= theta) & (tail_sorted <= phi)  # in group order
        position = np.where(allowed, np.arange(len(order)), len(order))
        if weight is not None and len(starts):  # the least weight of each group, the first of it in rate order
            w = np.where(allowed, weight[order], np.inf)
            least = np.minimum.reduceat(w, starts)
            member = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(order))))
            position = np.where((w <= least[member]) & np.isfinite(w), position, len(order))
        first = np.minimum.reduceat(position, starts) if len(starts) else position[:0]
        found = first < len(order)
        chosen, at = order[first[found]], keys[found]
        shape = (f_max + 1, n_spans * n_sites)
        entry, rate, time = np.full(shape, -1, np.int64), np.full(shape, np.inf), np.full(shape, np.inf)
        entry.reshape(-1)[at], rate.reshape(-1)[at], time.reshape(-1)[at] = chosen, values[chosen], self.time[chosen]
        for f in range(f_max - 1, 0, -1):  # an entry holding f + 1 in flight holds f
            better = (rate[f + 1] < rate[f]) | ((rate[f + 1] == rate[f]) & (time[f + 1] < time[f]))
            for array in (rate, time, entry):
                np.copyto(array[f], array[f + 1], where=better)
        shape = (f_max + 1, n_spans, n_sites)
        return rate.reshape(shape), time.reshape(shape), entry.reshape(shape)

    def link_ok(self, theta: float) -> np.ndarray:
        """(L, sites, sites) bool: a stage ending at layer k on one site may hand over to a stage on
        another (same site, or a link whose time per micro-batch is within theta)."""
        bandwidth, latency, _ = self.problem.link_matrix()
        with np.errstate(divide="ignore"):
            hop = self.b * self.problem.act_bytes[:, None, None] / bandwidth[None] + latency[None]
        return (bandwidth[None] > 0) & (hop <= theta)

    def least_rate(
        self, theta: float, phi: float, weight: np.ndarray | None = None, most: int | None = None,
        stages: int | None = None,
    ):  # fmt: skip
        """The dynamic program over stage boundaries: for every stage count S up to `most` (all
        when None), the least Σ r of plans whose every τ ≤ theta and φ ≤ phi (links within
        theta), each stage holding its in-flight chunks (with `weight`, the least Σ of that
        per-entry weight); among plans of equal Σ r, one of least largest τ. Interleaved (v > 1)
        what a stage holds depends on the stage count: `stages` names the one count whose
        answer is exact (None: a lower bound for every count, one chunk a stage).
        Returns (least (Q + 1,) with least[S], back) for `plan_of`."""
        if self.v > 1 and stages is not None:
            most = stages
        q_max, n_sites = min(self.max_stages, most or self.max_stages), len(self.problem.sites)
        in_flight = self.needs(q_max, stages)
        rate, time, entry = self.cheapest(theta, phi, weight, max(int(in_flight.max()), 1))
        n = self.problem.num_layers
        by_q = rate[in_flight].transpose(1, 0, 2)  # (spans, Q + 1, sites)
        time_q = time[in_flight].transpose(1, 0, 2)
        ok = self.link_ok(theta)
        boundaries = len(self.starts) + 1  # index k: layer starts[k], the last one: n (the end)
        sh_value = np.full((boundaries, q_max + 1, n_sites), np.inf)
        sh_slow = np.full((boundaries, q_max + 1, n_sites), np.inf)
        value, slow, choice, nxt_site = {}, {}, {}, {}
        q_index, s_index = np.arange(q_max + 1)[:, None], np.arange(n_sites)[None, :]

        def shift(k: int, layer: int, v: np.ndarray, u: np.ndarray) -> None:
            """The least value (and its τ) after a stage ending before boundary k, one stage fewer."""
            if layer == n:
                w, tw, arg = v[:, :1], u[:, :1], None
            else:  # w[q, s] = min over s' reachable from s of v[q, s']
                masked = np.where(ok[layer - 1][None], v[:, None, :], np.inf)
                arg = _lex_argmin(masked, u[:, None, :], axis=2)
                w, tw = masked[q_index, s_index, arg], u[q_index, arg]
            sh_value[k, 1:], sh_slow[k, 1:] = w[:-1], tw[:-1]
            nxt_site[layer] = np.zeros(v.shape, np.int64) if arg is None else np.vstack([arg[:1] * 0, arg[:-1]])

        end = np.full((q_max + 1, n_sites), np.inf)
        end[0] = 0.0
        shift(boundaries - 1, n, end, np.zeros_like(end))
        value[n] = end
        for k in range(len(self.starts) - 1, -1, -1):
            spans, after = self._spans_at[k], self._after_at[k]
            cand = by_q[spans] + sh_value[after]
            cand_slow = np.maximum(time_q[spans], sh_slow[after])
            best = _lex_argmin(cand, cand_slow, axis=0)
            start = int(self.starts[k])
            value[start], slow[start] = cand[best, q_index, s_index], cand_slow[best, q_index, s_index]
            choice[start] = best + spans.start
            if k > 0:
                shift(k, start, value[start], slow[start])
        back = (choice, nxt_site, entry, in_flight)
        return value[0].min(axis=1), (value, back)

    def plan_of(self, stages: int, solved) -> list[int]:
        """The entries, in pipeline order, of the least-rate plan of `stages` stages."""
        value, (choice, nxt_site, entry, in_flight) = solved
        site = int(value[0][stages].argmin())
        start, q, out = 0, stages, []
        while q > 0:
            span = choice[start][q, site]
            out.append(int(entry[in_flight[q], span, site]))
            after = int(self.span_last[span]) + 1
            site = int(nxt_site[after][q, site]) if after < self.problem.num_layers else site
            start, q = after, q - 1
        return out


class SharedTables:
    """Stage tables kept across problems that differ only in the throughput floor, the samples
    to train and the types' prices (a what-if sweep): one table per (micro-batch, allowed
    types), built once and re-priced for each problem (`StageTable.priced_for`). At most
    `most` tables are kept (the least recently used go first)."""

    def __init__(self, most: int = 256):
        self.most = most
        self.tables: dict = {}
        self.shape = None
        self.hits = self.builds = 0

    def get(self, problem: ParallelProblem, b: int, deadline=None) -> StageTable:
        """The table of `problem` under micro-batch b; ValueError when `problem` differs from the
        first problem seen in more than the floor, the samples and the prices; TableUnfinished
        (nothing kept) where `deadline` passes while it is built."""
        shape = problem.shape()
        self.shape = shape[:-1] if self.shape is None else self.shape
        if shape[:-1] != self.shape:
            raise ValueError("shared stage tables serve problems that differ only in floor, samples and prices")
        key = (b, shape[-1])
        table = self.tables.pop(key, None)
        if table is None:
            table = StageTable(problem, b, deadline)
            self.builds += 1
        else:
            self.hits += 1
        self.tables[key] = table
        while len(self.tables) > self.most:
            self.tables.pop(next(iter(self.tables)))
        return table.priced_for(problem)
