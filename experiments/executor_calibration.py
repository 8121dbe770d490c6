"""Prediction error of the cost model on executed plans, before and after `hps profile`
(issue 5's figures), on 8 fake CPU devices.

    python experiments/executor_calibration.py [--workload ctr-dnn-small] [--batches 4096,65536]
        [--runs 3] [--out results/executor_calibration.json]

For each global batch B: `hps profile` times every layer on two pools of 4 host devices (named
cpu and t4 of cloud-2024) at micro-batch B/2, then `hps execute` runs the CPU-stage | GPU-stage
plan (embedding and concat on cpu, the MLP on t4, 4 replicas each, 2 micro-batches, a 4-chunk
Themis All-Reduce) `--runs` times on the roofline table and on the profiled table, and the
per-stage errors (measured / predicted − 1) are printed and written as JSON.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from hps.cli.main import main  # noqa: E402

DEVICES = "cpu=0-3,t4=4-7"


def cli_json(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--json"])
    if code != 0:
        raise SystemExit(f"hps {' '.join(argv)} failed with status {code}")
    return json.loads(out.getvalue())


def execute(workload: str, batch: int) -> dict:
    schedule = ",".join(["cpu", "cpu", "t4", "t4", "t4", "t4"])
    return cli_json(
        [
            "execute",
            "--workload",
            workload,
            "--batch",
            str(batch),
            "--schedule",
            schedule,
            "--devices",
            DEVICES,
            "--replicas",
            "4,4",
            "--chunks",
            "4",
        ]
    )


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="ctr-dnn-small")
    parser.add_argument("--batches", default="4096,65536")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default="results/executor_calibration.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for batch in (int(b) for b in args.batches.split(",")):
            table = str(Path(tmp) / f"{args.workload}-{batch}.toml")
            cli_json(
                [
                    "profile",
                    "--workload",
                    args.workload,
                    "--batch",
                    str(batch),
                    "--devices",
                    DEVICES,
                    "--repeats",
                    "7",
                    "--out",
                    table,
                ]
            )
            for label, workload in (("roofline", args.workload), ("profiled", table)):
                for run in range(args.runs):
                    report = execute(workload, batch)
                    errors = [s["error"] for s in report["stages"]]
                    rows.append(
                        {
                            "batch": batch,
                            "table": label,
                            "run": run,
                            "errors": errors,
                            "measured_ms": [s["measured_time"] * 1e3 for s in report["stages"]],
                            "predicted_ms": [s["predicted_time"] * 1e3 for s in report["stages"]],
                            "measured_throughput": report["measured_throughput"],
                            "predicted_throughput": report["predicted_throughput"],
                        }
                    )
                    print(
                        f"B={batch:6d} {label:8s} run {run}: "
                        + "  ".join(
                            f"{name} {m:7.2f} ms vs {p:9.3f} ms ({e:+.0%})"
                            for name, m, p, e in zip(
                                ("cpu", "t4"), rows[-1]["measured_ms"], rows[-1]["predicted_ms"], errors
                            )
                        )
                    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main_()
