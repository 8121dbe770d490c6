"""The on-policy algorithms by name: `make_update(agent, config, tx)` picks REINFORCE or PPO by
config.algorithm (one of `hps.rl.driver.ALGORITHMS`)."""

from __future__ import annotations

from hps.rl import ppo, reinforce
from hps.rl.agent import Agent

UPDATES = {"reinforce": reinforce.make_update, "ppo": ppo.make_update}


def make_update(agent: Agent, config, tx):
    """update(state, context, index) -> (state, metrics) of config.algorithm for `agent`, which
    `hps.rl.driver.scan_chunk` scans."""
    return UPDATES[config.algorithm](agent, config, tx)
