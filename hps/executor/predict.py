"""The cost model's prediction for a plan as it is executed (docs/placement-model.md).

The executor may run a stage with fewer replicas than the plan provisioned (a pool smaller than
the plan), so the prediction is made for the replica counts that actually run, with the
placement model's own terms: compute = (B/k)·Σ t(l,t) (measured per-sample times where the
workload has them, else the roofline) + M·c, with M the micro-batches per iteration and c the
stage's fixed call cost per micro-batch where the workload has one measured for the type
(`measured_call_s`, `hps profile`; the schedule model of the planners leaves it out, the
parallel-plan model counts it); boundary = (B/k)·2·(a_in + a_out)/nic_bw, or, where the
workload has the moves measured on the type's devices at the stage's micro-batch per replica
B/(M·k) (`hps profile`), M times what the stage receives per micro-batch (its input unless it is
the first stage, its output's gradient unless it is the last); sync = allreduce_t(W, k) with W
the bytes the stage All-Reduces.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from hps.config.types import Catalog, Job, Workload
from hps.costmodel.parallel.problem import measured_boundary, measured_moves
from hps.costmodel.schedule import build_params
from hps.costmodel.schedule.allreduce import allreduce_coefficients
from hps.costmodel.schedule.cost import layer_time


@dataclass(frozen=True)
class StagePrediction:
    """Seconds per iteration (global batch B) of one stage, by term."""

    compute: float
    boundary: float
    sync: float

    @property
    def time(self) -> float:
        return self.compute + self.boundary + self.sync


def predict_stages(
    workload: Workload,
    catalog: Catalog,
    job: Job,
    stages: list[tuple[int, int, int, int]],
    synced_bytes: list[float],
    micro_batches: int = 1,
) -> list[StagePrediction]:
    """stages: (first layer, last layer, type index, replicas k[, tensor degree t]) each;
    synced_bytes: W per stage (bytes of gradients one device All-Reduces each iteration);
    micro_batches: M, each paying the stage's measured call cost once. With
    t > 1 the compute term is divided by t (an even split of every layer; the tensor-parallel
    All-Reduces inside the layers have no term here)."""
    params = build_params(workload, catalog, job)
    per_sample = np.asarray(layer_time(params))  # (L, T) s/sample
    act = [layer.act_bytes for layer in workload.layers]
    last_layer = len(workload.layers) - 1
    out = []
    for (first, last, t, k, *tensor), w in zip(stages, synced_bytes):
        per_replica = job.batch / k
        split = tensor[0] if tensor else 1
        a_in = act[first - 1] if first > 0 else 0.0
        a_out = act[last] if last < last_layer else 0.0
        compute = per_replica * float(per_sample[first : last + 1, t].sum()) / split
        compute += micro_batches * workload.measured_call_s.get(catalog.names[t], 0.0)
        boundary = per_replica * 2.0 * (a_in + a_out) / float(params.nic_bw[t])
        m = job.batch / (micro_batches * k)
        if m == int(m):
            inward, gradient = measured_moves(workload.layers, catalog.names[t], split, int(m))
            received = float(measured_boundary(inward, gradient, first, last))
            boundary = boundary if np.isnan(received) else micro_batches * received
        sync = 0.0
        if k > 1 and w > 0:
            alpha, beta = allreduce_coefficients(
                params.net_size[t],
                params.net_bandwidth[t],
                params.net_latency[t],
                params.net_algorithm[t],
                jnp.int32(k),
                params.chunks,
                params.use_themis,
            )
            sync = w * float(alpha) + float(beta)
        out.append(StagePrediction(compute, boundary, sync))
    return out
