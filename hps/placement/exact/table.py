"""The stage table of the exact solver: every stage (first layer, last layer, type) of a plan of
S stages, provisioned once (hps.placement.model.provisioning), as (L, L, T) arrays."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from hps.errors import InstanceTooLarge
from hps.placement.model.provisioning import FEASIBLE, Instance, provision


@dataclass(frozen=True)
class Table:
    """Every stage [first, last, t] of a plan of S stages, (L, L, T): cost rate r ($/h, inf
    where the stage is not provisionable or not allowed), time τ (s), replicas."""

    rate: np.ndarray
    time: np.ndarray
    replicas: np.ndarray


BYTES_PER_STAGE = 160
"""Bytes the solver holds per (first, last, type) entry while it builds and searches a table."""


def check_table_size(inst: Instance) -> None:
    """InstanceTooLarge when L·L·T table entries would take over half of this machine's memory."""
    entries = inst.num_layers**2 * inst.num_types
    needed = entries * BYTES_PER_STAGE
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if needed > memory / 2:
        raise InstanceTooLarge(
            f"the exact solver's stage table of {inst.num_layers} layers x {inst.num_types} types ({entries:,} "
            f"stages) needs about {needed / 2**30:,.0f} GiB, over half of this machine's {memory / 2**30:,.0f} GiB"
        )


def stage_table(inst: Instance, stages: int) -> Table:
    """Every stage of a plan of `stages` stages, provisioned."""
    first, last = np.triu_indices(inst.num_layers)  # every stage span, first <= last
    t = inst.num_types
    return fill_table(inst, np.repeat(first, t), np.repeat(last, t), np.tile(np.arange(t), len(first)), stages)


def fill_table(inst: Instance, first, last, types, stages: int) -> Table:
    """The table of the stages first..last on types (N,) each, provisioned; the others inf."""
    n, t = inst.num_layers, inst.num_types
    got = provision(inst, first, last, types, stages)
    ok = got.reason == FEASIBLE
    rate, seconds = np.full((n, n, t), np.inf), np.full((n, n, t), np.inf)
    replicas = np.zeros((n, n, t), np.int64)
    flat = (first * n + last) * t + types
    rate.ravel()[flat] = np.where(ok, got.replicas * inst.price[types], np.inf)
    seconds.ravel()[flat] = np.where(ok, got.time, np.inf)
    replicas.ravel()[flat] = got.replicas
    return Table(rate, seconds, replicas)
