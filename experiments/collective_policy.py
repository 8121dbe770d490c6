"""Train a collective policy on random networks and compare it with Themis (issue 4's figures).

    python experiments/collective_policy.py [--chunks 18] [--envs 256] [--seed 0] [--out results/collective.json]

Trains with REINFORCE (`hps.collective.agent.train`) for chunks × 10 updates (about two minutes
on 2 CPU cores at the defaults), then reports the mean bandwidth utilization of the learned
policy (greedy), Themis, the baseline order and the best fixed permutation, all with SCF, on 512
held-out networks and on the topology suite (topologies/networks/, at 1 GiB in 64 chunks and at
64 MiB in 16 and 64 chunks), with the suite figures per network.
"""

from __future__ import annotations

import argparse
import json
import time

import jax

from hps.collective.agent.evaluation import evaluate_instances, evaluate_suite
from hps.collective.agent.policy import CollectivePolicyFunctions, CollectivePolicySpec
from hps.collective.agent.train import (
    CollectiveTrainConfig,
    checkpoint_spec,
    init_collective_state,
    make_collective_train,
)
from hps.collective.env.generator import HELDOUT_NETWORKS, generate_collectives
from hps.config.paths import TOPOLOGIES

SUITE_SETTINGS = ((2.0**30, (64,)), (2.0**26, (16, 64)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=18, help="training chunks of 10 updates")
    parser.add_argument("--envs", type=int, default=256, help="episodes per update (8 per instance)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heldout", type=int, default=512, help="held-out networks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the figures as JSON")
    args = parser.parse_args()
    config = CollectiveTrainConfig(
        policy=CollectivePolicySpec(hidden=args.hidden), num_envs=args.envs, num_chunks=args.chunks, seed=args.seed
    )
    devices = jax.devices()[:1]
    state = init_collective_state(config, devices=devices)
    started = time.perf_counter()
    train_chunk = make_collective_train(config, devices=devices).lower(state).compile()
    compile_s = time.perf_counter() - started
    started = time.perf_counter()
    for chunk in range(config.num_chunks):
        state, metrics = train_chunk(state)
        print(f"chunk {chunk}: sampled utilization {float(metrics['utilization']):.4f}", flush=True)
    train_s = time.perf_counter() - started
    policy, env = CollectivePolicyFunctions(config.policy), config.env()
    heldout = generate_collectives(jax.random.PRNGKey(123), args.heldout, HELDOUT_NETWORKS)
    held = evaluate_instances(policy, state.params, env, heldout)
    paths = sorted(TOPOLOGIES.glob("networks/*.toml"))
    suite = [evaluate_suite(policy, state.params, env, paths, (size,), chunks) for size, chunks in SUITE_SETTINGS]
    result = {
        "spec": checkpoint_spec(config),
        "compile_s": compile_s,
        "train_s": train_s,
        "updates_per_s": int(state.step) / train_s,
        "heldout": {"mean": held["mean"], "wins": held["wins"], "losses": held["losses"]},
        "suite": [{"mean": s["mean"], "wins": s["wins"], "losses": s["losses"], "rows": s["rows"]} for s in suite],
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as stream:
            stream.write(text + "\n")


if __name__ == "__main__":
    main()
