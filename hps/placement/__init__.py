"""Placement (the HeterPS problem): which resource type runs each layer, and how many units.

model/    padded instance params and the vectorised cost model (pure jnp)
search/   planners that search the model: single-type, greedy, random, genetic, gradient,
          exhaustive, stage moves
env/      instance generators and the functional PlacementEnv
agent/    the Flax policy, its rollouts and training, planning with a trained policy
"""
