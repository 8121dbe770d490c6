"""The parallel-plan model (docs/parallel-plans.md): pipeline stages of (first layer, last layer,
type, tensor-parallel degree t, data-parallel degree d) with integer micro-batches, memory per
device at the job's precision, and links between the sites where types live.

problem   the instance: workload, catalogue and job as float64 arrays, built once
stages    every quantity of a stage, vectorised over any number of stages
score     one plan's score (feasibility, iteration time, throughput, cost, MFU)
batched_params, batched   the same score for many plans of many instances in one jitted JAX call
"""
