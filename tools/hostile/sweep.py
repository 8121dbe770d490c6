"""The hostile-input sweep: every command with malformed and extreme inputs, and faults around a
training run folder, each run as a real `hps` process and classed by how it ended.

Classes: `ok` (exit 0, finite figures), `refused` (exit 2 with a one-line message), and the
failures: `traceback`, `hang` (no exit within the time limit), `non-finite output` (nan or inf
printed as a figure), `raw control characters` (a name's control character printed as is),
`executed` (a file that must not run as Python ran), `lost record` (metrics of a finished
chunk missing or doubled after a kill and resume, or ahead of the checkpoints after a stop),
`loaded damaged` (a damaged checkpoint used without complaint), `two runs in one folder` and
`exit N` (any other status); and, for the newer cases, `replaced special file` (a device, FIFO,
socket or symlink in the working folder, /dev/null, or a file outside the folder a link points
at, no longer what it was), `mixed run folder` (outputs beside another run's that the folder's
manifest does not attribute), `silently accepted` (exit 0 where no run can honour the input, or
without a word where one is owed), `misleading message` (a refusal that says the wrong thing),
`impossible figure` (more replicas or micro-batches than samples, no checkpoint after training),
`two verdicts`, `wrong format` (a figure not in its suffix's format), `unreported stop` and `lock
left` (a stop signal ended a command silently, or left its lock held). A closed standard output
must end the command with status 0 or 141 and nothing on standard error but hps's own lines.

The earlier cases are `tools.hostile.cases` (keys caseNNN); the newer ones are
`hostile_files` and `hostile_flags` (keys newNNN), run with `cases="new"` or `cases="all"`; those
of plan format hps-plan/3, the clocks and the Python API are `tools.hostile.plans` (keys
plan3NNN), run with `cases="plan3"` or `cases="all"`. Their classes add `none found` (a good end:
exit 1 where a case allows that no plan is found, with a message), `stale output` (exit 0 that
left the output file as it was before the command), `lost output` (an output file there before
a command that wrote no plan, changed or gone); `silently accepted` also where a plan the model
scores infeasible is not said to be (check "infeasible"), or a schedule-model workload was
planned in the parallel-plan model without a note saying so (check "model-note").
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
from hps.errors import ConfigError
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from tools.hostile import budgets as hostile_budgets
from tools.hostile import files as hostile_files
from tools.hostile import flags as hostile_flags
from tools.hostile import plans as hostile_plans
from tools.hostile import policy as hostile_policy
from tools.hostile import processes as hostile_processes
from tools.hostile import setup as hostile_setup
from tools.hostile.cases import all_cases
from tools.hostile.setup import CHUNKS, TINY_TRAINING, run_hps
from tools.hostile.steps import run_procedure

GOOD = ("ok", "refused", "none found")
NON_FINITE = re.compile(r"(?<![\w.-])(nan|[-+]?inf(inity)?)(?![\w-])", re.IGNORECASE)
ALLOWED_INF = re.compile(r"micro[-_ ]batches\W+inf|M\s*=\s*inf|\binf\b\)", re.IGNORECASE)
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
BIDI = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
SETS = ("earlier", "new", "plan3", "budgets", "processes", "policy", "all")
PIPE_STATUSES = (0, 141, -13)
"""How a command whose standard output closed may end: done, or 128 + SIGPIPE as shells show it."""
COLLECTIVE_TRAINING = """
from hps.collective.agent.policy import CollectivePolicySpec
from hps.collective.agent.train import CollectiveTrainConfig

CONFIG = CollectiveTrainConfig(policy=CollectivePolicySpec(hidden=16), num_envs=64, samples_per_instance=4,
                               updates_per_chunk=2, num_chunks=1)
"""
PARALLEL_TRAINING = """
from hps.placement.agent.parallel_train import ParallelTrainConfig

CONFIG = ParallelTrainConfig(pool_size=2, num_envs=16, samples_per_instance=8, updates_per_chunk=1, num_chunks=1,
                             eval_instances=1, max_stages=4)
"""
TRAINING = {"collective": COLLECTIVE_TRAINING, "parallel": PARALLEL_TRAINING}
FIXTURES: dict[str, Path] = {}
"""Trained run folders (kind -> folder), trained once per process and copied into cases."""


@dataclass(frozen=True, kw_only=True)
class HostileSweepConfig(ExperimentConfig):
    """The sweep over `hostile_cases.all_cases()` (cases="earlier"), the newer cases of
    `hostile_files` and `hostile_flags` (cases="new"), those of `hostile_plans` (cases="plan3"),
    those of `hostile_budgets` (cases="budgets"), of `hostile_processes` (cases="processes"), of
    `hostile_policy` (cases="policy"), or all of them; `groups`: only these groups."""

    AT_LEAST = {"groups": 0}
    name: str = "hostile_sweep"
    cases: str = "earlier"
    groups: tuple[str, ...] = ()
    timeout_s: float = 30.0
    """A single command that has not exited after this long is a hang."""
    train_timeout_s: float = 240.0
    """The limit of one training run inside a run-folder procedure (it compiles first)."""


def new_cases() -> list[dict]:
    """The newer cases (`hostile_files`, then `hostile_flags`), in report order."""
    return hostile_files.cases() + hostile_flags.cases()


def items(config: HostileSweepConfig) -> list[tuple[str, dict]]:
    if config.cases not in SETS:
        raise ConfigError(config.name, "cases", f"must be one of {', '.join(SETS)}, got {config.cases!r}")
    keyed = []
    if config.cases in ("earlier", "all"):
        keyed += [(f"case{i:03d}", case) for i, case in enumerate(all_cases())]
    if config.cases in ("new", "all"):
        keyed += [(f"new{i:03d}", case) for i, case in enumerate(new_cases())]
    if config.cases in ("plan3", "all"):
        keyed += [(f"plan3{i:03d}", case) for i, case in enumerate(hostile_plans.cases())]
    if config.cases in ("budgets", "all"):
        keyed += [(f"budget{i:03d}", case) for i, case in enumerate(hostile_budgets.cases())]
    if config.cases in ("processes", "all"):
        keyed += [(f"process{i:03d}", case) for i, case in enumerate(hostile_processes.cases())]
    if config.cases in ("policy", "all"):
        keyed += [(f"policy{i:03d}", case) for i, case in enumerate(hostile_policy.cases())]
    known = {case["group"] for _, case in keyed}
    unknown = [group for group in config.groups if group not in known]
    if unknown:
        raise ConfigError(
            config.name, "groups", f"no case is in group {unknown[0]!r}; groups: {', '.join(sorted(known))}"
        )
    return [(key, case) for key, case in keyed if not config.groups or case["group"] in config.groups]


_hps = run_hps


def classify(run: dict, case: dict, cwd: Path) -> str:
    """The class of one finished command (see the module docstring)."""
    if run["hung"]:
        return "hang"
    if "Traceback (most recent call last)" in run["err"] + run["out"] or "BrokenPipeError" in run["err"]:
        return "traceback"
    if (cwd / "ran").exists():
        return "executed"
    escape = BIDI if case.get("escape") else CONTROL if case["group"] == "control characters" else None
    if escape and escape.search(run["out"] + run["err"].replace("\n", "")):
        return "raw control characters"
    if case.get("pipe") is not None:
        return "ok" if run["rc"] in PIPE_STATUSES else f"exit {run['rc']}"
    output = _output_left(run, case, cwd)
    if output:
        return output
    if run["rc"] == 1 and case.get("none_found") and re.search(NONE_FOUND, run["out"] + run["err"]):
        return "none found"
    if run["rc"] == 0:
        return _finished(run, case, cwd)
    if run["rc"] == 2 and run["err"].strip():
        said = _said(run) or run["err"]
        wrong = case.get("not_said") and re.search(case["not_said"], said)
        return "misleading message" if wrong or not re.search(case.get("said", ""), said) else "refused"
    return f"exit {run['rc']}"


NONE_FOUND = r"(?i)no (feasible )?plan|infeasible|not? .*found"
"""What a command that found no plan says (exit 1)."""


def _output_left(run: dict, case: dict, cwd: Path) -> str | None:
    """`stale output` or `lost output` where a case's `out` file is not what the command's end
    leaves: a new plan file after exit 0, the file as it was (or none) otherwise; else None."""
    if not case.get("out"):
        return None
    path = cwd / case["out"]
    text = path.read_text(errors="replace") if path.is_file() else None
    if run["rc"] == 0:
        if text is None or text == case.get("stale"):
            return "stale output"
        try:
            json.loads(text)["format"]
        except (ValueError, KeyError, TypeError):
            return "stale output"
        return None
    return "lost output" if text != case.get("stale") else None


def _finished(run: dict, case: dict, cwd: Path) -> str:
    """The class of a command that exited 0."""
    if case.get("expect") == "refusal" or (case.get("expect") == "notice" and not run["err"].strip()):
        return "silently accepted"
    checks = case.get("check", ())
    if "format" in checks and hostile_setup.wrong_format(cwd, case["argv"]):
        return "wrong format"
    if "batch" in checks and hostile_setup.impossible_figure(run["out"]):
        return "impossible figure"
    if "verdict" in checks and hostile_setup.two_verdicts(run["out"]):
        return "two verdicts"
    if "checkpoint" in checks and not any(p.name.isdigit() for p in (cwd / "r" / "checkpoints").glob("*")):
        return "impossible figure"
    if "infeasible" in checks and not re.search(r"infeasible|\"feasible\": false|^False\b", run["out"], re.M):
        return "silently accepted"
    if "model-note" in checks and " v 1, FP8 " in run["out"] and "parallel-plan model" not in run["err"]:
        return "silently accepted"
    shown = ALLOWED_INF.sub("", run["out"])
    return "non-finite output" if NON_FINITE.search(shown) else "ok"


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


def _fixture(kind: str, cwd: Path, config: HostileSweepConfig) -> dict | None:
    """Copy a trained run folder of `kind` to cwd/ck (trained on first use); the failed
    training's run when it could not be trained."""
    if kind not in FIXTURES:
        folder = Path(tempfile.mkdtemp(prefix=f"hps-hostile-{kind}-"))
        atomic_write_text(folder / "t.py", TRAINING.get(kind, TINY_TRAINING))
        run = run_hps(["train", "t.py", "--out", "run", "--eval-every", "0"], folder, config.train_timeout_s)
        if run["rc"] != 0:
            return run
        FIXTURES[kind] = folder / "run"
    hostile_setup.copy_run_folder(FIXTURES[kind], cwd / "ck")
    return None


def _prepare(case: dict, cwd: Path, outside: Path, config: HostileSweepConfig) -> tuple[list[int], dict | None]:
    """The case's files, fixture and special files in `cwd`: (FIFO readers, a failed fixture's run)."""
    for name, content in case["files"].items():
        hostile_setup.write_case_file(cwd / name, content)
    failed = _fixture(case["fixture"], cwd, config) if case.get("fixture") else None
    readers = [hostile_setup.make_special(cwd, outside, name, kind) for name, kind in case.get("special", {}).items()]
    return [reader for reader in readers if reader is not None], failed


def run_item(config: HostileSweepConfig, case: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="hps-hostile-") as scratch:
        cwd, outside = Path(scratch) / "case", Path(scratch) / "outside"
        cwd.mkdir()
        outside.mkdir()
        readers, failed = _prepare(case, cwd, outside, config)
        before = hostile_setup.snapshot(cwd, outside)
        started = time.perf_counter()
        if failed:
            run, kind, message = failed, "fixture " + classify(failed, {"group": ""}, cwd), _said(failed)
        elif case.get("steps") in hostile_flags.PROCEDURES:
            run = None
            kind, message = run_procedure(case["steps"], cwd, config.train_timeout_s)
        elif case.get("steps"):
            run = None
            kind, message = run_steps(case["steps"], cwd, config)
        else:
            command = [sys.executable, "-c", hostile_plans.RUNNER, case["python"]] if case.get("python") else None
            limit = case.get("timeout", config.timeout_s)
            run = run_hps(case["argv"], cwd, limit, case.get("pipe"), command=command)
            kind, message = classify(run, case, cwd), _said(run)
        seconds = time.perf_counter() - started
        for reader in readers:
            hostile_setup.drain(reader)
        written = {
            f"{name.replace('/', '_')}.target" for name, k in case.get("special", {}).items() if k == "link-out-w"
        }
        replaced = hostile_setup.changes(before, cwd, outside, written)
        mixed = hostile_setup.unmarked_outputs(cwd)
    if replaced or mixed:
        kind, message = ("replaced special file", replaced) if replaced else ("mixed run folder", mixed)
    if run is not None and not message:
        message = (run["err"].strip().splitlines() or [""])[-1].encode("unicode_escape").decode()[:200]
    command = case["steps"] if case.get("steps") else "hps " + " ".join(case["argv"])
    command = f"python -c {case['python'].strip()!r}" if case.get("python") else command
    special = ", ".join(f"{name} as {k}" for name, k in case.get("special", {}).items())
    command += f"  [{special}]" if special else ""
    command += f" | head -c {case['pipe']}" if case.get("pipe") is not None else ""
    return {"group": case["group"], "command": command.encode("unicode_escape").decode(), "class": kind,
            "message": message, "seconds": seconds}  # fmt: skip


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
