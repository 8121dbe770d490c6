"""The stage table of the exact solver: the provisioned stages (first layer, last layer, type) of
a plan of S stages (hps.costmodel.schedule.provisioning), kept sparse.

Only feasible stages are stored, sorted by (first, last, type); every other stage is not
allowed (rate inf). The pooled-cap search and HeterPS schedules read the dense (L, L, T) form,
which `Table.dense` builds once where memory allows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hps.contract.memory import refuse_past_memory
from hps.costmodel.schedule.provisioning import FEASIBLE, Instance, every_stage, provision

CHUNK = 1 << 20
"""Stages provisioned (or bounded) per pass: memory stays bounded at any size, and arrays of
this size stay in cache (faster than larger passes)."""

BYTES_PER_SPAN = 96
"""Bytes the solver holds per span (first, last): its per-span arrays while it searches."""

BYTES_PER_DENSE_STAGE = 48
"""Bytes per (first, last, type) of the dense form (rate, time, replicas and a mask)."""


def _refuse(what: str, needed: float) -> None:
    """InstanceTooLarge past half of the memory this process may use (the machine's, or less
    under a container's or `ulimit -v`'s limit: `hps.contract.memory`)."""
    refuse_past_memory(what, needed)


def check_table_size(inst: Instance) -> None:
    """InstanceTooLarge when the solver's per-span arrays would take over half of memory."""
    n = inst.num_layers
    _refuse(
        f"the exact solver's span arrays of {n} layers x {inst.num_types} types ({n * n:,} spans)",
        n * n * BYTES_PER_SPAN,
    )


def refuse_dense(inst_or_sizes) -> None:
    """InstanceTooLarge when the dense (L, L, T) table would take over half of memory."""
    n, t = (inst_or_sizes.num_layers, inst_or_sizes.num_types)
    _refuse(
        f"the dense stage table of {n} layers x {t} types ({n * n * t:,} stages)", n * n * t * BYTES_PER_DENSE_STAGE
    )


@dataclass(frozen=True)
class DenseTable:
    """Every stage [first, last, t] (L, L, T): cost rate r ($/h, inf where not allowed), time τ
    (s), replicas."""

    rate: np.ndarray
    time: np.ndarray
    replicas: np.ndarray

    def bottleneck(self, plan) -> float:
        """max τ (s per iteration) over the stages (first, last, type) of `plan`."""
        first, last, types = (np.array(column) for column in zip(*plan))
        return float(np.max(self.time[first, last, types]))


@dataclass(frozen=True)
class Table:
    """The feasible stages of a plan of S stages, (N,) each, sorted by (first, last, type):
    first, last, type, rate ($/h), time (s per iteration), replicas."""

    num_layers: int
    num_types: int
    first: np.ndarray
    last: np.ndarray
    type: np.ndarray
    rate: np.ndarray
    time: np.ndarray
    replicas: np.ndarray
    _dense: list = field(default_factory=list, repr=False, compare=False)
    _stored: list = field(default_factory=list, repr=False, compare=False)

    def _keys(self, first, last, types) -> np.ndarray:
        return (np.asarray(first) * self.num_layers + np.asarray(last)) * self.num_types + np.asarray(types)

    def index(self, first, last, types) -> np.ndarray:
        """Positions of stages (arrays or scalars) in the table; KeyError for one not in it."""
        keys = self._keys(first, last, types)
        if not self._stored:
            self._stored.append(self._keys(self.first, self.last, self.type))
        stored = self._stored[0]
        at = np.searchsorted(stored, keys)
        if np.any(at >= len(stored)) or np.any(stored[np.minimum(at, len(stored) - 1)] != keys):
            raise KeyError("a stage not in the table")
        return at

    def subset(self, keep: np.ndarray) -> Table:
        """The table of the stages where keep (N,) is true."""
        fields = (self.first, self.last, self.type, self.rate, self.time, self.replicas)
        return Table(self.num_layers, self.num_types, *(a[keep] for a in fields))

    def bottleneck(self, plan) -> float:
        """max τ (s per iteration) over the stages (first, last, type) of `plan`; KeyError for a
        stage not in the table."""
        return float(np.max(self.time[self.index(*(np.array(column) for column in zip(*plan)))]))

    def stage_time(self, first: int, last: int, t: int) -> float:
        return float(self.time[self.index(first, last, t)])

    def stage_replicas(self, first: int, last: int, t: int) -> int:
        return int(self.replicas[self.index(first, last, t)])

    def dense(self) -> DenseTable:
        """The (L, L, T) form (built once); InstanceTooLarge past half of memory."""
        if not self._dense:
            refuse_dense(self)
            n, t = self.num_layers, self.num_types
            rate, seconds = np.full((n, n, t), np.inf), np.full((n, n, t), np.inf)
            replicas = np.zeros((n, n, t), np.int64)
            flat = self._keys(self.first, self.last, self.type)
            rate.ravel()[flat], seconds.ravel()[flat], replicas.ravel()[flat] = self.rate, self.time, self.replicas
            self._dense.append(DenseTable(rate, seconds, replicas))
        return self._dense[0]


def stage_table(inst: Instance, stages: int) -> Table:
    """Every stage of a plan of `stages` stages, provisioned."""
    return fill_table(inst, *every_stage(inst.num_layers, inst.num_types), stages)


def fill_table(inst: Instance, first, last, types, stages: int) -> Table:
    """The table of the stages first..last on types (N,) each (sorted by (first, last, type)),
    provisioned CHUNK at a time; those that are not feasible are left out."""
    kept = []
    for start in range(0, len(first), CHUNK):
        part = slice(start, start + CHUNK)
        got = provision(inst, first[part], last[part], types[part], stages)
        ok = got.reason == FEASIBLE
        f, e, t = first[part][ok], last[part][ok], types[part][ok]
        kept.append((f, e, t, got.replicas[ok] * inst.price[t], got.time[ok], got.replicas[ok]))
    f, e, t, rate, seconds, replicas = (np.concatenate(c) for c in zip(*kept)) if kept else [np.zeros(0)] * 6
    ints = (f.astype(np.int64), e.astype(np.int64), t.astype(np.int64))
    return Table(inst.num_layers, inst.num_types, *ints, rate, seconds, replicas.astype(np.int64))
