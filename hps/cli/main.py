"""Entry point of the `hps` console script."""

from __future__ import annotations

import argparse
import os
import sys

from hps import __version__
from hps.errors import HpsError


def build_parser() -> argparse.ArgumentParser:
    from hps.cli import bench, collective, evaluate, plan, search, train, workload

    parser = argparse.ArgumentParser(prog="hps", description="Plan and run training on heterogeneous hardware.")
    parser.add_argument("--version", action="version", version=f"hps {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in (search, evaluate, collective, train, plan, workload, bench):
        module.register(subparsers)
    return parser


def enable_compile_cache() -> None:
    """JAX's persistent compilation cache, so repeated commands skip XLA compiles.

    Directory: $JAX_COMPILATION_CACHE_DIR, else ~/.cache/hps/jax; HPS_COMPILE_CACHE=0 turns it off.
    """
    if os.environ.get("HPS_COMPILE_CACHE") == "0":
        return
    import jax

    default = os.path.join(os.path.expanduser("~"), ".cache", "hps", "jax")
    jax.config.update("jax_compilation_cache_dir", os.environ.get("JAX_COMPILATION_CACHE_DIR", default))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    enable_compile_cache()
    try:
        return args.run(args)
    except HpsError as error:
        print(f"hps {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
