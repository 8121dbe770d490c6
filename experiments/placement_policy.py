"""Evaluate a trained placement policy (issue 4's acceptance figures).

    python experiments/placement_policy.py --checkpoint runs/placement-policy \
        [--also runs/placement-ppo ...] [--out results/policy.json]

Held-out small instances (≤ 10 layers, ≤ 4 types): feasibility and mean cost / exhaustive
optimum with 64 samples and greedy, the best sample refined by stage moves, beside the GA and
the gradient search at the same evaluations. Held-out 24–32-layer instances: mean cost / best
single-type plan for the policy, the GA at the policy's evaluations and at its default 51,200.
`--also` evaluates more checkpoints (e.g. a PPO-trained policy) the same way, keyed by
their training algorithm and folder.
"""

from __future__ import annotations

import argparse
import json
import time

from hps.placement.agent.evaluation import compare_on_large, compare_with_optimum
from hps.rl.checkpoint import checkpoint_folder, load_policy


def evaluate(folder: str, args) -> dict:
    """The small- and large-instance figures of the policy in checkpoint `folder`."""
    policy, params, spec = load_policy(checkpoint_folder(folder))
    small = compare_with_optimum(policy, params, count=args.small, samples=args.samples).to_dict()
    large = compare_on_large(policy, params, count=args.large, samples=args.samples) if args.large else {}
    algorithm = spec["train"].get("algorithm", "?")
    return {"checkpoint_step": spec["step"], "algorithm": algorithm, "small": small, "large": large}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--also", action="append", default=[], help="another checkpoint to evaluate alike")
    parser.add_argument("--small", type=int, default=50, help="held-out small instances")
    parser.add_argument("--large", type=int, default=20, help="held-out 24-32-layer instances")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--out", help="write the figures as JSON")
    args = parser.parse_args()
    started = time.perf_counter()
    result = evaluate(args.checkpoint, args)
    result["also"] = {folder: evaluate(folder, args) for folder in args.also}
    result["seconds"] = time.perf_counter() - started
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as stream:
            stream.write(text + "\n")


if __name__ == "__main__":
    main()
