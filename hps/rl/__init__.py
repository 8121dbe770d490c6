"""What both agents share: the env interface with auto-reset, the agent contract and the
algorithms written once against it (REINFORCE, PPO), the chunked training driver, env-batch
sharding, multi-process set-up, checkpoints and policy specs."""
