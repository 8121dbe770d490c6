"""Every planning method, each behind the one contract of `hps.contract`.

exact_schedule/  the schedule model's exact solver (a certificate: bound and gap)
exact_parallel/  the parallel-plan model's exact solver
search/          jnp searches over schedules: single-type, greedy, random, genetic, gradient,
                 exhaustive, stage moves
sequence/        type-sequence planners of the parallel-plan model completed exactly, and the sweep
"""
