"""Placement policies (the HeterPS problem): which resource type runs each layer.

env/      instance generators and the functional PlacementEnv
agent/    the Flax policy, its rollouts and training, planning with a trained policy
"""
