"""Placement search baselines over schedules (docs/placement-model.md, "Searches over the model"):
single-type plans, greedy per layer, random search, a genetic algorithm, exhaustive search, and a
gradient search (straight-through Gumbel-softmax over schedule logits). The optimum over every
plan is the exact solver's, `hps.methods.exact_schedule`.

Each is a planner of the schedule model, `plan(problem, budget, *, warmup=True, **options) ->
PlanResult`, reached by name through `hps.methods.registry`.
"""
