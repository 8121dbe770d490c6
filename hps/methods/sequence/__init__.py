"""The parallel-plan model's planners, each `plan(problem, budget) -> PlanResult` (registered in
`hps.methods.registry`). Every planner but `exact` searches type sequences over segments (runs of
layers between allowed cuts) and completes each exactly with the solver restricted to it.

completion   segments, the cached completions, the moves between sequences
basic        exact, single, greedy, exhaustive
stochastic   random, genetic, refine (seeded)
sweep        what-if sweeps over floors and prices, and their point search (`sequence`)
"""
