"""Planning: the problem every planner takes, the one registry of planner names, the comparison
with the certified optimum, and every planning method behind the contract of `hps.contract`.

problem.py       Problem: a workload on a catalogue under a job and a clock, tables on demand
registry.py      the one list of planner names, each imported on first use
compare.py       planners beside the exact solver's optimum and certificate
exact_schedule/  the schedule model's exact solver (a certificate: bound and gap)
exact_parallel/  the parallel-plan model's exact solver
search/          jnp searches over schedules: single-type, greedy, random, genetic, gradient,
                 exhaustive, stage moves
sequence/        type-sequence planners of the parallel-plan model completed exactly, and the sweep
"""
