"""Collective policy vs Themis: train a collective policy on random networks with REINFORCE for
18 chunks of 10 updates of 256 episodes (about two minutes on 2 CPU cores), then compare its
greedy decoding with Themis, the baseline order and the best fixed permutation, all with SCF, by
mean bandwidth utilization on 512 held-out networks and on the topology suite (topologies/
networks/, at 1 GiB in 64 chunks, at 64 MiB in 16 and 64 chunks, and at 1 GiB in 1,024 chunks, 16
times the most the policy trained on), with the suite per network.

    hps run experiments/collective_policy.py

The trained policy is saved in runs/collective-policy-study (`hps collective --policy learned
--checkpoint runs/collective-policy-study` plans with it).
"""

from hps.studies.collective_policy import CollectivePolicyConfig


def config() -> CollectivePolicyConfig:
    return CollectivePolicyConfig(
        name="collective_policy",
        chunks=18,
        envs=256,
        hidden=64,
        heldout=512,
        suite=((2.0**30, (64,)), (2.0**26, (16, 64)), (2.0**30, (1024,))),
        policy_dir="runs/collective-policy-study",
    )
