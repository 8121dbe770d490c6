"""The cost models plans are scored on.

schedule/  the HeterPS per-layer model: one type per layer, replicas provisioned per stage
           (padded jnp params and the vectorised evaluation; the numpy path for explicit plans)
parallel/  the parallel-plan model: stages with tensor- and data-parallel degrees, micro-batches,
           memory per device, sites and links
clocks/    how long a layer takes on a device: the roofline and the calibrated kernel-level model
"""
