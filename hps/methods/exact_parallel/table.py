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
from hps.costmodel.parallel.stages import StageArrays, stage_arrays, stage_memory
from hps.methods.exact_parallel.dominance import undominated
from hps.methods.exact_parallel.program import boundary_program, least_sums

CANDIDATE_BYTES = 240
"""Peak bytes per (span, option) candidate while the table is built (about thirty float64 and
int64 arrays over the candidates)."""


class TableUnfinished(Exception):
    """A deadline passed while a stage table was built."""


class StageTable:
    """The stages of `problem` under micro-batch b, and the least-rate dynamic program."""

    def __init__(self, problem: ParallelProblem, b: int, deadline=None, prune: bool = True, figures=None):
        """`deadline`: anything with `passed()`, checked between types (TableUnfinished). prune:
        drop the dominated entries now (else `prune()` later; `least_work` needs no pruning).
        figures: None (numpy's `stage_arrays`) or a `batched_stages.StageFigures` of `problem`
        (the batched JAX scorer's code, every type's candidates in one call)."""
        self.problem, self.b, self.figures = problem, b, figures
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
        self._splits = problem.splits(self.span_first, self.span_last)  # spans of at least v units
        self.span_from = np.searchsorted(self.starts, self.span_first)  # boundary index of each span's start
        self.span_after = np.searchsorted(self.starts, self.span_last + 1)  # and of the one after (K: the end)
        self._hop = None
        self._build(deadline)
        self.pruned = False
        if prune:
            self.prune()

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
        """The entries, type by type, in (span, option) order; TableUnfinished where `deadline`
        (anything with `passed()`) passes between types."""
        parts, types = [], [np.flatnonzero(self.options[:, 0] == y) for y in range(self.problem.num_types)]
        grids = [self._grid(options) for options in types]
        figures = self._figures(grids) if self.figures is not None else [None] * len(grids)
        for options, grid, arrays in zip(types, grids, figures):
            if deadline is not None and deadline.passed():
                raise TableUnfinished(f"the stage table of micro-batch {self.b} was left unfinished at its deadline")
            parts.append(self._entries(options, grid, arrays))
        span, opt, f, time, tail, rate, units = (np.concatenate(column) for column in zip(*parts))
        order = np.argsort(span, kind="stable")  # each type's part is in (span, option) order
        self.entry_span, self.entry_opt = span[order], opt[order]
        self.time, self.tail, self.rate = time[order], tail[order], rate[order]
        self.fits = f[order].astype(np.int64)
        self.entry_type = self.options[self.entry_opt, 0]
        self.site = self.problem.type_site[self.entry_type]
        self.units = units[order]
        self._group_cache = {}
        self.compacted_to = self.depth

    def _grid(self, options: np.ndarray) -> np.ndarray:
        """The spans (rows) that `options` (one type's) may take: every layer allowed, v units."""
        y = self.options[options[:1], 0]
        return np.flatnonzero(self._splits & self.problem.span_allowed(self.span_first, self.span_last, y))

    def _figures(self, grids: list[np.ndarray]) -> list:
        """Per type, the StageArrays of its (span, option) grid, (rows, options) each, from one
        call of `self.figures` over every type's grid."""
        cells = []
        for y, rows in enumerate(grids):
            options = np.flatnonzero(self.options[:, 0] == y)
            span, option = np.repeat(rows, len(options)), np.tile(options, len(rows))
            cells.append((span, option))
        span, option = (np.concatenate(column) for column in zip(*cells))
        y, t, d = (self.options[option, i] for i in range(3))
        arrays = self.figures(self.b, self.span_first[span], self.span_last[span], y, t, d)
        bounds = np.cumsum([0, *(len(s) for s, _ in cells)])
        out = []
        for rows, low, high in zip(grids, bounds[:-1], bounds[1:]):
            shape = (len(rows), (high - low) // max(len(rows), 1))
            part = {k: getattr(arrays, k)[low:high].reshape(shape) for k in StageArrays.__dataclass_fields__}
            out.append(StageArrays(**part))
        return out

    def _entries(self, options: np.ndarray, rows: np.ndarray, grid=None):
        """(span, option, in-flight count, τ, φ, $/hour, units) of the entries of `options`
        (indices into self.options, one type) on spans `rows` that hold a chunk in flight, in
        (span, option) order; grid: their StageArrays (rows, options), or None (numpy's)."""
        problem, b, v = self.problem, self.b, self.v
        y, t, d = (self.options[options, i] for i in range(3))  # (options,), one type
        first, last = self.span_first[rows, None], self.span_last[rows, None]
        if grid is None:
            static, activation, _ = stage_memory(problem, b, first, last, t[None], d[None])  # (spans, options)
        else:
            static, activation = grid.static_memory, grid.activation_memory
        at, column = np.nonzero(static + activation / v <= problem.memory_limit[y[0]])  # one chunk in flight fits
        span, opt, y, t, d = rows[at], options[column], y[column], t[column], d[column]
        if grid is None:
            arrays = stage_arrays(problem, b, self.span_first[span], self.span_last[span], y, t, d)
        else:
            arrays = StageArrays(**{k: getattr(grid, k)[at, column] for k in StageArrays.__dataclass_fields__})
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
        columns = (span, opt, f, arrays.time, arrays.tail, arrays.rate, arrays.units)
        return tuple(column[keep] for column in columns)

    def prune(self) -> None:
        """Drop the entries that a cheaper-or-equal entry of the same span, type and in-flight
        count beats on both τ and φ (`dominance.undominated`): the least-rate program never
        needs them. Entry indices change: solutions cached before are void."""
        if not self.pruned:
            self._keep_undominated(self.fits)
            self.pruned = True

    def compact(self, most: int) -> None:
        """Drop the entries no plan of at most `most` stages needs (in-flight counts above what
        such plans hold no longer tell entries apart). Entry indices change: solutions cached
        before are void."""
        self._keep_undominated(np.minimum(self.fits, self.most_chunks(most)))
        self.pruned = True
        self.compacted_to = most

    def _keep_undominated(self, f: np.ndarray) -> None:
        """Keep the entries undominated within their (span, type, in-flight count `f`)."""
        keep = np.zeros(len(f), bool)
        bounds = np.searchsorted(self.options[:, 0], np.arange(self.problem.num_types + 1))  # options are type-major
        for low, high in zip(bounds[:-1], bounds[1:]):  # dominance is within a type
            at = np.flatnonzero((self.entry_opt >= low) & (self.entry_opt < high))
            kept = undominated(self.entry_span[at], self.entry_opt[at] - low, f[at],
                               self.rate[at], self.time[at], self.tail[at])  # fmt: skip
            keep[at[kept]] = True
        for name in ("entry_span", "entry_opt", "entry_type", "time", "tail", "rate", "fits", "site", "units"):
            setattr(self, name, getattr(self, name)[keep])
        self._group_cache = {}

    def priced_for(self, problem: ParallelProblem) -> StageTable:
        """This table for `problem`, which differs from the one it was built for at most in the
        throughput floor and the types' prices (`SharedTables` checks that): the entries, τ, φ,
        in-flight counts and units do not depend on either (dominance is compared within one
        type, whose price scales every rate alike); only the rates are priced anew."""
        out = copy.copy(self)
        out.problem = problem
        out.rate = self.units * problem.price[self.entry_type]
        out._group_cache = {}
        return out

    def stage(self, entry: int) -> tuple[int, int, int, int, int]:
        """(first, last, type, t, d) of an entry."""
        s, o = self.entry_span[entry], self.entry_opt[entry]
        y, t, d = self.options[o]
        return int(self.span_first[s]), int(self.span_last[s]), int(y), int(t), int(d)

    def _groups(self, most: int):
        """(order, group starts, group of each place, group keys, τ, φ, levels) of the entries
        sorted by (in-flight count clipped to `most`, span, site, rate, τ), with τ and φ in that
        order; a group's key is its flat index in a (most + 1, spans, sites) array; levels: the
        clipped in-flight counts present, ascending; cached."""
        if most in self._group_cache:
            return self._group_cache[most]
        n_spans, n_sites = len(self.span_first), len(self.problem.sites)
        key = (np.minimum(self.fits, most) * n_spans + self.entry_span) * n_sites + self.site
        order = np.lexsort((self.time, self.rate, key))
        new = np.concatenate([[len(key) > 0], key[order][1:] != key[order][:-1]])
        starts, keys = np.flatnonzero(new), key[order][new]
        levels = np.unique(keys // (n_spans * n_sites))
        cached = (order, starts, np.cumsum(new) - 1, keys, self.time[order], self.tail[order], levels)
        self._group_cache[most] = cached
        return cached

    def cheapest(self, theta: float, phi: float, weight: np.ndarray | None = None, most: int | None = None):
        """(weight, τ, entry, row): weight, τ and entry (levels + 1, spans, sites) and row
        (f_max + 1,) with f_max = min(depth, most), so that [row[f], span, site] is the least
        weight ($/hour unless given) of an entry with τ ≤ theta and φ ≤ phi of the span and site
        that holds at least f chunks in flight (f ≥ 1), its τ (s) and index (−1, weight and τ
        inf: none); ties: the least τ (with a weight, the least rate, then τ), then the fewest in
        flight. Levels are the in-flight counts some entry holds; row 0 has no entry."""
        n_spans, n_sites = len(self.span_first), len(self.problem.sites)
        f_max = min(self.depth, most or self.depth)
        order, starts, group_of, keys, time_sorted, tail_sorted, levels = self._groups(f_max)
        values = self.rate if weight is None else weight
        place = np.flatnonzero((time_sorted <= theta) & (tail_sorted <= phi))  # allowed, in group order
        if weight is not None:  # the least weight of each group, the first of it in rate order
            w = weight[order[place]]
            place, w = place[np.isfinite(w)], w[np.isfinite(w)]
            if len(place):
                group = group_of[place]
                new = np.concatenate([[True], group[1:] != group[:-1]])
                place = place[w <= np.minimum.reduceat(w, np.flatnonzero(new))[np.cumsum(new) - 1]]
        group = group_of[place]
        first = place[np.concatenate([[True], group[1:] != group[:-1]])] if len(place) else place
        chosen, at = order[first], keys[group_of[first]]
        size = n_spans * n_sites
        shape = (len(levels) + 1, size)  # row 0: no entry
        entry, rate, time = np.full(shape, -1, np.int64), np.full(shape, np.inf), np.full(shape, np.inf)
        at = (np.searchsorted(levels, at // size) + 1) * size + at % size
        entry.reshape(-1)[at], rate.reshape(-1)[at], time.reshape(-1)[at] = chosen, values[chosen], self.time[chosen]
        for k in range(len(levels) - 1, 0, -1):  # an entry holding more in flight holds fewer
            better = (rate[k + 1] < rate[k]) | ((rate[k + 1] == rate[k]) & (time[k + 1] < time[k]))
            for array in (rate, time, entry):
                np.copyto(array[k], array[k + 1], where=better)
        count = np.arange(f_max + 1)
        row = np.where(count > levels.max(initial=0), 0, np.searchsorted(levels, count) + 1)
        row[0] = 0
        shape = (len(levels) + 1, n_spans, n_sites)
        return rate.reshape(shape), time.reshape(shape), entry.reshape(shape), row

    def link_ok(self, theta: float) -> np.ndarray:
        """(K − 1, sites, sites) bool: a stage ending just before boundary k = 1 … K − 1 on one
        site may hand over to a stage on another (same site, or a link whose time per
        micro-batch is within theta)."""
        if self._hop is None:  # (K − 1, sites, sites) s per micro-batch, inf where no link
            bandwidth, latency, _ = self.problem.link_matrix()
            nbytes = self.b * self.problem.act_bytes[self.starts[1:] - 1]
            with np.errstate(divide="ignore"):
                hop = nbytes[:, None, None] / bandwidth[None] + latency[None]
            self._hop = np.where(bandwidth[None] > 0, hop, np.inf)
        return self._hop <= theta

    def least_rate(
        self, theta: float, phi: float, weight: np.ndarray | None = None, most: int | None = None,
        stages: int | None = None,
    ):  # fmt: skip
        """The dynamic program over stage boundaries (`program.boundary_program`): for every
        stage count S up to `most` (all when None), the least Σ r of plans whose every τ ≤ theta
        and φ ≤ phi (links within theta), each stage holding its in-flight chunks (with
        `weight`, the least Σ of that per-entry weight); among plans of equal Σ r, one of least
        largest τ. Interleaved (v > 1) what a stage holds depends on the stage count: `stages`
        names the one count whose answer is exact (None: a lower bound for every count, one
        chunk a stage). Returns (least (Q + 1,) with least[S], solved) for `plan_of` and
        `least_from`."""
        if self.v > 1 and stages is not None:
            most = stages
        q_max = min(self.max_stages, most or self.max_stages)
        in_flight = self.needs(q_max, stages)
        rate, time, entry, row = self.cheapest(theta, phi, weight, max(int(in_flight.max()), 1))
        rows = row[in_flight]  # the row of each q
        value, _, choice, next_site = boundary_program(
            rate, time, rows, self.span_from, self.span_after, self.link_ok(theta)
        )
        return value[0].min(axis=1), (value, choice, next_site, entry, rows)

    def least_work(self, theta: float, phi: float) -> np.ndarray:
        """(Q + 1,) Q = max_stages: for every stage count, the least Σ r·τ ($/hour · s) of the
        plans whose every τ ≤ theta and φ ≤ phi (links within theta), each stage holding what
        `least_rate` has it hold without a stage count (`needs`): least_rate's answer with
        weight r·τ, taken as plain minima (`program.least_sums`), so without the entries'
        order (the table's entries may be left undominated)."""
        q_max = self.max_stages
        in_flight = self.needs(q_max)
        f_max = min(self.depth, max(int(in_flight.max()), 1))
        n_spans, n_sites = len(self.span_first), len(self.problem.sites)
        work = np.full((f_max + 1, n_spans, n_sites), np.inf)
        at = np.flatnonzero((self.time <= theta) & (self.tail <= phi))
        cell = (np.minimum(self.fits[at], f_max), self.entry_span[at], self.site[at])
        np.minimum.at(work, cell, self.rate[at] * self.time[at])
        work[1:] = np.minimum.accumulate(work[1:][::-1], axis=0)[::-1]  # holding f + 1 in flight holds f
        return least_sums(work, in_flight, self.span_from, self.span_after, self.link_ok(theta))

    def least_from(self, solved) -> dict[int, np.ndarray]:
        """{boundary layer: (Q + 1,) the least Σ of the plans from it with q stages} of a
        `least_rate` answer (the end of the model, layer L, included)."""
        least = solved[0].min(axis=2)
        layers = [*self.starts.tolist(), self.problem.num_layers]
        return dict(zip(layers, least))

    def plan_of(self, stages: int, solved) -> list[int]:
        """The entries, in pipeline order, of the least-rate plan of `stages` stages."""
        value, choice, next_site, entry, rows = solved
        site = int(value[0][stages].argmin())
        k, q, out = 0, stages, []
        while q > 0:
            span = int(choice[k, q, site])
            out.append(int(entry[rows[q], span, site]))
            k = int(self.span_after[span])
            site = int(next_site[k, q, site]) if k < len(self.starts) else site
            q -= 1
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
