"""The placement agent: the Flax policy, rollouts, training (REINFORCE or PPO, with imitation of a
search teacher) and planning with a trained policy."""
