"""The collective model: hierarchical All-Reduce on multi-dimensional networks.

network (padded NetworkParams, T_ideal) ─▶ orders (chunk orders per policy) ─▶ simulator
(event-driven timeline, completion time, utilization).
"""

from hps.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "network": ("NetworkParams", "ideal_time", "network_batch", "network_params", "steps_per_phase_codes"),
        "orders": (
            "ORDER_POLICIES",
            "baseline_orders",
            "best_fixed_orders",
            "explicit_orders",
            "policy_orders",
            "roundrobin_orders",
            "themis_orders",
        ),
        "simulator": ("SimResult", "simulate", "simulate_allreduce", "utilization"),
        "themis": ("collective_orders",),
    },
)
