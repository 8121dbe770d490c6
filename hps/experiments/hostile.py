"""The hostile-input sweep: every command with malformed and extreme inputs, and faults around a
training run folder, each run as a real `hps` process and classed by how it ended.

Classes: `ok` (exit 0, finite figures), `refused` (exit 2 with a one-line message), and the
failures: `traceback`, `hang` (no exit within the time limit), `non-finite output` (nan or inf
printed as a figure), `raw control characters` (a name's control character printed as is),
`executed` (a file that must not run as Python ran), `lost record` (metrics of a finished
chunk missing or doubled after a kill and resume), `loaded damaged` (a damaged checkpoint
used without complaint), `two runs in one folder` and `exit N` (any other status). The cases are
`hps.experiments.hostile_cases`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from hps.config.files import atomic_write_text
from hps.experiments.base import ExperimentConfig, Summary, register_experiment_kind
from hps.experiments.hostile_cases import all_cases

GOOD = ("ok", "refused")
NON_FINITE = re.compile(r"(?<![\w.-])(nan|[-+]?inf(inity)?)(?![\w-])", re.IGNORECASE)
ALLOWED_INF = re.compile(r"micro[-_ ]batches\W+inf|M\s*=\s*inf|\binf\b\)", re.IGNORECASE)
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
TINY_TRAINING = """
from hps.placement.agent.policy import PolicySpec
from hps.placement.agent.train import TrainConfig
from hps.placement.env.generator import InstanceSplit

CONFIG = TrainConfig(split=InstanceSplit("sweep-tiny", 4, 6, 2, 3, salt=5), num_envs=64, updates_per_chunk=2,
                     num_chunks=6, seed=3, policy=PolicySpec(hidden=16))
"""
CHUNKS = 6


@dataclass(frozen=True, kw_only=True)
class HostileSweepConfig(ExperimentConfig):
    """The sweep over `hostile_cases.all_cases()`."""

    name: str = "hostile_sweep"
    timeout_s: float = 30.0
    """A single command that has not exited after this long is a hang."""
    train_timeout_s: float = 240.0
    """The limit of one training run inside a run-folder procedure (it compiles first)."""


def items(config: HostileSweepConfig) -> list[tuple[str, dict]]:
    return [(f"case{i:03d}", case) for i, case in enumerate(all_cases())]


def _hps(argv: list[str], cwd: Path, timeout: float) -> dict:
    """Run `hps argv` in `cwd`: {"rc", "out", "err", "seconds", "hung"}."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "hps.cli.main", *argv]
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, errors="replace")
        rc, out, err, hung = done.returncode, done.stdout, done.stderr, False
    except subprocess.TimeoutExpired as expired:
        rc, out, err, hung = None, str(expired.stdout or ""), str(expired.stderr or ""), True
    return {"rc": rc, "out": out, "err": err, "seconds": time.perf_counter() - started, "hung": hung}


def classify(run: dict, case: dict, cwd: Path) -> str:
    """The class of one finished command (see the module docstring)."""
    if run["hung"]:
        return "hang"
    if "Traceback (most recent call last)" in run["err"] + run["out"]:
        return "traceback"
    if (cwd / "ran").exists():
        return "executed"
    if case["group"] == "control characters" and CONTROL.search(run["out"] + run["err"].replace("\n", "")):
        return "raw control characters"
    if run["rc"] == 0:
        shown = ALLOWED_INF.sub("", run["out"])
        return "non-finite output" if NON_FINITE.search(shown) else "ok"
    if run["rc"] == 2 and run["err"].strip():
        return "refused"
    return f"exit {run['rc']}"


def _metrics(run_folder: Path) -> list[int]:
    path = run_folder / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["chunk"] for line in path.read_text().splitlines() if line.strip()]


def _train_and_kill(cwd: Path, timeout: float, after_records: int) -> None:
    """Start a training run and SIGKILL it once `after_records` metrics records exist."""
    command = [sys.executable, "-m", "hps.cli.main", "train", "tiny.py", "--out", "run", "--eval-every", "0"]
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.perf_counter() + timeout
    while process.poll() is None and time.perf_counter() < deadline:
        if len(_metrics(cwd / "run")) >= after_records:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.05)
    process.wait()


def _flip_bit(folder: Path) -> list[Path]:
    """Flip one bit in the middle of every data file under `folder` (files in a `d/` folder, as
    orbax's array store names them; else the largest file), in place: the damage a disk does,
    no new file, no rename. Returns the files."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    data = [p for p in files if p.parent.name == "d"] or [max(files, key=lambda p: p.stat().st_size)]
    for target in data:
        middle = target.stat().st_size // 2
        handle = os.open(target, os.O_RDWR)
        try:
            byte = os.pread(handle, 1, middle)
            os.pwrite(handle, bytes([byte[0] ^ 0x10]), middle)
        finally:
            os.close(handle)
    return data


def _latest_step(run_folder: Path) -> Path:
    steps = [p for p in (run_folder / "checkpoints").iterdir() if p.name.isdigit()]
    return max(steps, key=lambda p: int(p.name))


def _train(cwd: Path, timeout: float, extra: list[str] = ()) -> dict:
    return _hps(["train", "tiny.py", "--out", "run", "--eval-every", "0", *extra], cwd, timeout)


def _complete(run: dict, cwd: Path) -> str:
    """The class of a training run that should have finished every chunk once."""
    if run["hung"] or "Traceback" in run["err"]:
        return "hang" if run["hung"] else "traceback"
    if run["rc"] != 0:
        return f"exit {run['rc']}"
    return "ok" if _metrics(cwd / "run") == list(range(CHUNKS)) else "lost record"


def run_steps(step: str, cwd: Path, config: HostileSweepConfig) -> tuple[str, str]:
    """(class, what happened) of one run-folder procedure."""
    atomic_write_text(cwd / "tiny.py", TINY_TRAINING)
    limit = config.train_timeout_s
    if step in ("kill-early", "kill-late"):
        _train_and_kill(cwd, limit, 1 if step == "kill-early" else CHUNKS - 2)
        kept = len(_metrics(cwd / "run"))
        return _complete(_train(cwd, limit), cwd), f"killed with {kept} records, then resumed"
    if step == "concurrent":
        first = subprocess.Popen(
            [sys.executable, "-m", "hps.cli.main", "train", "tiny.py", "--out", "run", "--eval-every", "0"],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(3.0)
        second = _hps(["train", "tiny.py", "--out", "run", "--eval-every", "0"], cwd, config.timeout_s)
        first.wait(timeout=limit)
        if first.returncode != 0:
            return f"exit {first.returncode}", "the first run did not finish"
        if second["rc"] == 0:
            return "two runs in one folder", "the second run exited 0 beside the first"
        if second["rc"] != 2:
            return classify(second, {"group": ""}, cwd), "the second run"
        return _complete({"rc": 0, "err": "", "hung": False}, cwd), _said(second)
    if step == "stale-lock":
        atomic_write_text(cwd / "run" / ".lock", json.dumps({"pid": 2**22 + 12345, "host": os.uname().nodename}))
        run = _train(cwd, limit)
        return _complete(run, cwd), _said(run)
    done = _train(cwd, limit)
    if done["rc"] != 0:
        return classify(done, {"group": ""}, cwd), "the first training run failed"
    shutil.copytree(cwd / "run", cwd / "clean")
    _flip_bit(_latest_step(cwd / "run") / ("spec" if step == "flip-spec" else "state"))
    if step == "plan-damaged":
        plan = ["plan", "--workload", "ctr-dnn", "--catalog", "small", "--checkpoint"]
        run = _hps([*plan, "run"], cwd, limit)
        if run["rc"] == 2:
            return "refused", _said(run)
        clean = _hps([*plan, "clean"], cwd, limit)
        intact = run["rc"] == 0 and _plan_text(run["out"]) == _plan_text(clean["out"].replace("clean", "run"))
        if intact:
            return "ok", "the flipped bit left the arrays intact (the plan equals the undamaged one's)"
        return "loaded damaged", _said(run)
    run = _train(cwd, limit, ["--chunks", str(CHUNKS)])
    kind = _complete(run, cwd)
    fell_back = "damaged" in run["err"]
    return kind, _said(run) if fell_back else "the flipped bit left the arrays and spec intact (digests match)"


def _plan_text(out: str) -> str:
    """`hps plan`'s output without its timing line (the plan, the policy and the figures)."""
    return "\n".join(line for line in out.splitlines() if not line.startswith("planned in"))


def _said(run: dict) -> str:
    """The last line hps itself wrote to stderr (not a progress bar's), escaped, cut to 200."""
    lines = [line for line in run["err"].replace("\r", "\n").splitlines() if line.startswith("hps ")]
    return (lines[-1] if lines else "").encode("unicode_escape").decode()[:200]


def run_item(config: HostileSweepConfig, case: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="hps-hostile-") as scratch:
        cwd = Path(scratch)
        for name, text in case["files"].items():
            atomic_write_text(cwd / name, text)
        if case.get("steps"):
            started = time.perf_counter()
            kind, said = run_steps(case["steps"], cwd, config)
            return {"group": case["group"], "command": case["steps"], "class": kind, "message": said,
                    "seconds": time.perf_counter() - started}  # fmt: skip
        run = _hps(case["argv"], cwd, config.timeout_s)
        kind = classify(run, case, cwd)
    message = _said(run) or (run["err"].strip().splitlines() or [""])[-1].encode("unicode_escape").decode()[:200]
    return {"group": case["group"], "command": "hps " + " ".join(case["argv"]), "class": kind,
            "message": message, "seconds": run["seconds"]}  # fmt: skip


def summarize(config: HostileSweepConfig, results: dict[str, dict]) -> Summary:
    groups: dict[str, Counter] = {}
    for result in results.values():
        groups.setdefault(result["group"], Counter())[result["class"]] += 1
    classes = sorted({c for counts in groups.values() for c in counts}, key=lambda c: (c not in GOOD, c))
    rows = [[group, sum(counts.values()), *(counts.get(c, 0) for c in classes)] for group, counts in groups.items()]
    bad = [r for r in results.values() if r["class"] not in GOOD]
    markdown = "\n".join(f"- `{r['command']}`: **{r['class']}** {r['message']}" for r in bad) or "No failures."
    return Summary(
        results={"cases": results, "failures": len(bad)},
        headers=["group", "cases", *classes],
        rows=rows,
        markdown="Failures:\n\n" + markdown,
        title=f"Hostile inputs: {len(results)} cases, {len(bad)} failures",
    )


register_experiment_kind(HostileSweepConfig, items=items, run_item=run_item, summarize=summarize)
