"""The collective model: hierarchical All-Reduce on multi-dimensional networks.

network (padded NetworkParams, T_ideal) ─▶ orders (chunk orders per policy) ─▶ simulator
(event-driven timeline, completion time, utilization).
"""

from hps.collective.model.network import (
    NetworkParams,
    ideal_time,
    network_batch,
    network_params,
    steps_per_phase_codes,
)
from hps.collective.model.orders import (
    ORDER_POLICIES,
    baseline_orders,
    best_fixed_orders,
    explicit_orders,
    policy_orders,
    roundrobin_orders,
    themis_orders,
)
from hps.collective.model.simulator import (
    SimResult,
    simulate,
    simulate_allreduce,
    utilization,
)
from hps.collective.model.themis import collective_orders

__all__ = [
    "NetworkParams",
    "ORDER_POLICIES",
    "SimResult",
    "baseline_orders",
    "best_fixed_orders",
    "collective_orders",
    "explicit_orders",
    "ideal_time",
    "network_batch",
    "network_params",
    "policy_orders",
    "roundrobin_orders",
    "simulate",
    "simulate_allreduce",
    "steps_per_phase_codes",
    "themis_orders",
    "utilization",
]
