"""`hps train [EXPERIMENT.py]`: train a policy in a run folder, resuming if it holds one.

With no experiment, trains the default general placement policy (`default_placement_config`:
risk-seeking REINFORCE, LSTM, 4,096 environments of the TRAIN split), with `--kind parallel` the
default parallel-plan policy (`default_parallel_config`: imitation of the exact solver's plans and
risk-seeking REINFORCE on generated instances), or with `--kind collective` the default collective
policy (REINFORCE over random networks). An experiment file is Python defining CONFIG, a
`hps.placement.agent.train.TrainConfig`, `hps.placement.agent.parallel_train.ParallelTrainConfig` or
`hps.collective.agent.train.CollectiveTrainConfig` (or a function config() returning one). Flags
override its fields.

The run folder is locked while training: a second `hps train` into it exits 2 at once naming the
run that holds it. One line on stderr says when the lock of a run that died was taken over, when
damaged checkpoint steps were moved to `damaged-checkpoints/` (naming them and the step the
run resumes from), and when metrics records were lost. A resume whose config changes the
checkpoint's settings (seed, learning rate, …) exits 2 unless `--allow-changes` is given.
"""

from __future__ import annotations

import dataclasses
import functools
import runpy
import sys
from pathlib import Path

from hps.cli.common import add_seed_arg, float_range, int_range, print_json
from hps.config.files import check_output_dir
from hps.config.limits import MAX_ENVS, MAX_PROCESSES, MAX_TRAIN_MINUTES, MIN_TRAIN_MINUTES, UNBOUNDED_CHUNKS
from hps.errors import ConfigError

FLAGS = {"num_envs": "envs", "algorithm": "algorithm", "seed": "seed", "num_chunks": "chunks"}  # config field -> flag
SHOWN = (
    "reward",
    "feasible",
    "cost_ratio",
    "utilization",
    "eval_feasible",
    "eval_cost_ratio",
    "eval_utilization",
    "eval_themis_utilization",
)


def register(subparsers) -> None:
    parser = subparsers.add_parser("train", help="train a placement policy (resumes from the latest checkpoint)")
    parser.add_argument(
        "experiment",
        nargs="?",
        help="Python file (.py) defining CONFIG = TrainConfig(...); it is executed as Python with your "
        "permissions, so give only files you trust",
    )
    parser.add_argument(
        "--kind",
        choices=("placement", "parallel", "collective"),
        default="placement",
        help="the default policy to train when no experiment is given (default: %(default)s)",
    )
    parser.add_argument("--out", default="runs/placement-policy", help="run folder (default: %(default)s)")
    parser.add_argument(
        "--minutes",
        type=float_range(MIN_TRAIN_MINUTES, MAX_TRAIN_MINUTES, "at least one chunk is always trained"),
        help=f"wall-clock budget, {MIN_TRAIN_MINUTES:g} to {MAX_TRAIN_MINUTES:g}; training stops after the chunk "
        "that crosses it, and at least one chunk is trained",
    )
    parser.add_argument(
        "--chunks",
        type=int_range(1, UNBOUNDED_CHUNKS, "use --minutes for a run that time ends"),
        help="chunks of updates to run in all (resumed runs count earlier ones)",
    )
    parser.add_argument(
        "--envs", type=int_range(1, MAX_ENVS, "environments are batched in memory"), help="environments per update"
    )
    parser.add_argument("--algorithm", choices=("reinforce", "ppo"))
    add_seed_arg(parser, default=None, help="seed of the run (default: the experiment's), 0 to 2^32 - 1")
    parser.add_argument(
        "--eval-every", type=int, default=5, help="chunks between held-out evaluations; 0: never (default: %(default)s)"
    )
    parser.add_argument("--coordinator", help="HOST:PORT of process 0, for multi-process training")
    parser.add_argument(
        "--num-processes", type=int_range(1, MAX_PROCESSES), default=1, help="processes in a multi-process run"
    )
    parser.add_argument(
        "--process-id",
        type=int_range(0, MAX_PROCESSES - 1),
        default=0,
        help="this process's index in a multi-process run, below --num-processes",
    )
    parser.add_argument(
        "--allow-changes",
        action="store_true",
        help="resume even though the config changes settings of the checkpoint (seed, learning rate, …); "
        "the changes are recorded in metrics.jsonl and manifest.json",
    )
    parser.add_argument("--json", action="store_true", help="print the last metrics record as JSON")
    parser.set_defaults(run=run)


def load_experiment(path: str):
    """The TrainConfig an experiment file defines (CONFIG or config()). The file is executed as
    Python, so only a `.py` module is taken: anything else (a `.toml`, say) is a ConfigError
    naming it, raised before anything runs."""
    if Path(path).suffix != ".py":
        raise ConfigError(
            path, "", "an experiment is a Python module (.py) that hps executes; this file is not one and was not run"
        )
    from hps.collective.agent.train import CollectiveTrainConfig
    from hps.placement.agent.parallel_train import ParallelTrainConfig
    from hps.placement.agent.train import TrainConfig

    if not Path(path).is_file():
        raise ConfigError(path, "", "no such experiment file")
    try:
        namespace = runpy.run_path(path)
    except ConfigError as error:  # a config the file builds rejects a value
        raise ConfigError(path, f"CONFIG.{error.field}", error.problem) from None
    except Exception as error:
        raise ConfigError(path, "", f"cannot run the experiment file: {type(error).__name__}: {error}") from error
    config = namespace.get("CONFIG")
    if config is None and callable(namespace.get("config")):
        config = namespace["config"]()
    if not isinstance(config, (TrainConfig, ParallelTrainConfig, CollectiveTrainConfig)):
        raise ConfigError(
            path,
            "CONFIG",
            "must be a hps.placement.agent.train.TrainConfig, ParallelTrainConfig or CollectiveTrainConfig "
            "(or define config() returning one)",
        )
    return config


def resolve_config(args):
    from hps.collective.agent.train import CollectiveTrainConfig
    from hps.placement.agent.parallel_train import default_parallel_config
    from hps.placement.agent.train import default_placement_config

    if args.experiment:
        config = load_experiment(args.experiment)
    else:
        defaults = {"placement": default_placement_config, "parallel": default_parallel_config}
        config = defaults.get(args.kind, CollectiveTrainConfig)()
        if args.kind == "placement" and args.envs is None and args.num_processes == 1:
            from hps.rl.device_scale import device_recipe_scale

            envs, updates = device_recipe_scale()  # the default recipe scales with the device
            config = dataclasses.replace(config, num_envs=envs, updates_per_chunk=updates)
    changes = {name: getattr(args, flag) for name, flag in FLAGS.items() if getattr(args, flag) is not None}
    if args.minutes is not None and args.chunks is None:
        changes["num_chunks"] = UNBOUNDED_CHUNKS
    try:
        return dataclasses.replace(config, **changes)
    except ConfigError as error:
        flag = f"--{FLAGS[error.field]}" if error.field in changes else None
        raise ConfigError(flag or args.experiment or "command line", error.field, error.problem) from None


def check_flags(args) -> None:
    """ConfigError naming the flag of a value no run can use, before anything starts."""
    check_output_dir(args.out, "--out")
    if args.eval_every < 0:
        raise ConfigError("--eval-every", "eval_every", f"must be ≥ 0, got {args.eval_every}")
    if args.process_id >= args.num_processes:
        raise ConfigError(
            "--process-id", "process_id", f"must be below --num-processes {args.num_processes}, got {args.process_id}"
        )
    if args.process_id > 0 and args.coordinator is None:
        raise ConfigError("--process-id", "process_id", "a process other than 0 needs --coordinator HOST:PORT")


def run(args) -> int:
    check_flags(args)
    if args.coordinator is not None:
        from hps.io.processes import initialize, waiting_notice

        print(f"hps train: {waiting_notice(args.coordinator, args.num_processes, args.process_id)}", file=sys.stderr)
        from hps.cli.processes import give_up

        ended = functools.partial(give_up, "train")
        initialize(args.coordinator, args.num_processes, args.process_id, on_timeout=ended)
    elif args.num_processes != 1:
        raise ConfigError("--num-processes", "num_processes", "needs --coordinator HOST:PORT")
    from tqdm import tqdm

    from hps.io.processes import is_primary
    from hps.rl.session import SessionPaths, train_session

    config = resolve_config(args)
    total = None if config.num_chunks == UNBOUNDED_CHUNKS else config.num_chunks
    bar = tqdm(total=total, desc="train", unit="chunk", file=sys.stderr, disable=args.json or not is_primary())

    def on_chunk(record):
        bar.n = record["chunk"] + 1
        postfix = {name: f"{record[name]:.3f}" for name in SHOWN if name in record}
        bar.set_postfix(postfix, refresh=True)

    try:
        state, records = train_session(
            config,
            args.out,
            minutes=args.minutes,
            on_chunk=on_chunk,
            eval_every=max(args.eval_every, 1),
            evaluate=args.eval_every > 0,
            on_notice=lambda line: tqdm.write(f"hps train: {line}", file=sys.stderr),
            command=args.argv,
            allow_changes=args.allow_changes,
        )
    finally:
        bar.close()  # before any error message, on a line of its own
    paths = SessionPaths(Path(args.out))
    last = records[-1] if records else {}
    if args.json:
        print_json({"out": str(paths.out), "step": int(state.step), **last})
        return 0
    print(f"trained {int(state.step)} updates of {config.num_envs} envs ({type(config).__name__})")
    if last:
        figures = ", ".join(f"{name} {last[name]:.3f}" for name in SHOWN if name in last)
        print(f"last chunk: {figures}; {last['elapsed_s']:.0f} s in all")
    print(f"checkpoints: {paths.checkpoints}\nmetrics:     {paths.metrics}\ncurve:       {paths.curve}")
    return 0
