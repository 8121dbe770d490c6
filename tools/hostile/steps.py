"""The sweep's newer multi-step procedures: a stop signal (SIGTERM, SIGHUP) during `hps train`,
`hps quickstart` and `hps run`, and two `hps run` of one experiment into one --out at once.

A stopped command must say so in one `hps CMD` line (else `unreported stop`), release its lock
(the holder's record left in `.lock`: `lock left`), keep no metrics record ahead of the newest
checkpoint (`lost record`), and resume to a whole run. Each procedure returns (class, what
happened); the post-conditions every case gets (special files, run-folder manifests) are the
runner's.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tools.hostile.flags import pipe_cases
from tools.hostile.setup import CHUNKS, start_hps

TRAIN = ["train", "tiny.py", "--out", "run", "--eval-every", "0"]
QUICKSTART = ["quickstart", "--chunks", "1", "--envs", "64", "--workloads", "mlp", "--out", "qs"]
RUN = ["run", "mini.py", "--out", "res"]
MINI_ITEMS = len(pipe_cases())
"""The items of mini.py's experiment."""


def _started(argv: list[str], cwd: Path, log: str) -> subprocess.Popen:
    return start_hps(argv, cwd, log=log)


def _ended(process: subprocess.Popen, cwd: Path, log: str, timeout: float) -> dict:
    """{"rc", "err", "hung"} of a started process, killed past `timeout`."""
    try:
        process.wait(timeout=timeout)
        hung = False
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        hung = True
    err = (cwd / f"{log}.err").read_text(errors="replace")
    return {"rc": None if hung else process.returncode, "err": err, "hung": hung}


def _wait_for(condition, process: subprocess.Popen, timeout: float) -> bool:
    deadline = time.perf_counter() + timeout
    while process.poll() is None and time.perf_counter() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _records(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    lines = path.read_text().splitlines() if path.is_file() else []
    return [json.loads(line) for line in lines if line.strip()]


def _newest_step(run: Path) -> int:
    steps = [int(p.name) for p in (run / "checkpoints").glob("*") if p.name.isdigit()] if run.is_dir() else []
    return max(steps, default=0)


def _stopped(done: dict, command: str, folder: Path) -> tuple[str, str] | None:
    """The failure class of a command stopped by a signal, or None when it stopped well."""
    if done["hung"]:
        return "hang", "still running after the signal"
    if "Traceback (most recent call last)" in done["err"]:
        return "traceback", _last_line(done["err"])
    said = [line for line in done["err"].replace("\r", "\n").splitlines() if line.startswith(f"hps {command}")]
    if not said:
        return "unreported stop", f"exit {done['rc']} with no 'hps {command}' line"
    lock = folder / ".lock"
    if lock.is_file() and not lock.is_symlink() and lock.read_text().strip():
        return "lock left", f"{lock.name} still names a holder after exit {done['rc']}"
    return None


def _last_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    return (lines[-1] if lines else "").encode("unicode_escape").decode()[:200]


def stop_train(cwd: Path, signum: int, limit: float) -> tuple[str, str]:
    first = _started(TRAIN, cwd, "first")
    if not _wait_for(lambda: len(_records(cwd / "run")) >= 1, first, limit):
        done = _ended(first, cwd, "first", 1.0)
        return (
            ("ok", "ended before its first record")
            if done["rc"] == 0
            else (f"exit {done['rc']}", _last_line(done["err"]))
        )
    first.send_signal(signum)
    failed = _stopped(_ended(first, cwd, "first", 60.0), "train", cwd / "run")
    if failed:
        return failed
    steps = [record.get("step", 0) for record in _records(cwd / "run")]
    if steps and max(steps) > _newest_step(cwd / "run"):
        return "lost record", f"metrics at step {max(steps)}, newest checkpoint at step {_newest_step(cwd / 'run')}"
    resumed = _ended(_started(TRAIN, cwd, "second"), cwd, "second", limit)
    chunks = [record.get("chunk") for record in _records(cwd / "run")]
    if resumed["rc"] != 0 or chunks != list(range(CHUNKS)):
        return "lost record", f"the resume exited {resumed['rc']} with chunks {chunks}"
    return "ok", f"stopped by signal {signum}, said so, resumed whole"


def stop_quickstart(cwd: Path, signum: int, limit: float) -> tuple[str, str]:
    first = _started(QUICKSTART, cwd, "first")
    _wait_for(lambda: False, first, 20.0)
    first.send_signal(signum)
    failed = _stopped(_ended(first, cwd, "first", 60.0), "quickstart", cwd / "qs")
    return failed or ("ok", f"stopped by signal {signum} and said so")


def _items(cwd: Path) -> int:
    folder = cwd / "res" / "mini" / "items"
    return len(list(folder.glob("*.json"))) if folder.is_dir() else 0


def stop_run(cwd: Path, signum: int, limit: float) -> tuple[str, str]:
    first = _started(RUN, cwd, "first")
    if not _wait_for(lambda: _items(cwd) >= 2, first, limit):
        return "ok", "ended before its second item"
    first.send_signal(signum)
    failed = _stopped(_ended(first, cwd, "first", 60.0), "run", cwd / "res" / "mini")
    if failed:
        return failed
    resumed = _ended(_started(RUN, cwd, "second"), cwd, "second", limit)
    results = json.loads((cwd / "res" / "mini" / "results.json").read_text()) if resumed["rc"] == 0 else {}
    if len(results.get("results", {}).get("cases", {})) != MINI_ITEMS:
        return "lost record", f"the resume exited {resumed['rc']} without {MINI_ITEMS} items"
    return "ok", f"stopped by signal {signum}, said so, resumed whole"


def two_runs(cwd: Path, limit: float) -> tuple[str, str]:
    """Two `hps run` of one experiment into one --out, the second started while the first runs."""
    first = _started(RUN, cwd, "first")
    _wait_for(lambda: _items(cwd) >= 1, first, limit)
    second = _ended(_started(RUN, cwd, "second"), cwd, "second", limit)
    done = _ended(first, cwd, "first", limit)
    if done["hung"] or second["hung"]:
        return "hang", "a run did not end"
    if "Traceback (most recent call last)" in done["err"] + second["err"]:
        return "traceback", _last_line(done["err"] + second["err"])
    if done["rc"] == 0 and second["rc"] == 0:
        return "two runs in one folder", "both runs exited 0 into one folder"
    if done["rc"] != 0:
        return f"exit {done['rc']}", "the first run did not finish"
    return ("refused", _last_line(second["err"])) if second["rc"] == 2 else (f"exit {second['rc']}", "the second run")


def run_procedure(step: str, cwd: Path, limit: float) -> tuple[str, str]:
    """(class, what happened) of procedure `step` (`hostile_flags.PROCEDURES`)."""
    signum = signal.SIGHUP if step.startswith("sighup") else signal.SIGTERM
    if step.endswith("-train"):
        return stop_train(cwd, signum, limit)
    if step.endswith("-quickstart"):
        return stop_quickstart(cwd, signum, limit)
    if step.endswith("-run"):
        return stop_run(cwd, signum, limit)
    return two_runs(cwd, limit)
