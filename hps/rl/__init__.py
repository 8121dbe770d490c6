"""What both agents share: the env interface with auto-reset, REINFORCE and PPO, the chunked
training driver, env-batch sharding, multi-process set-up, checkpoints and policy specs."""
