"""What the hostile sweep sets up around one case and checks after it, whatever the command.

Before a case: its special files, made in its working folder (`make_special`): character
devices (scratch copies of /dev/null and /dev/full made with mknod), FIFOs (with or without a
reader), sockets, a block device node no driver answers, directories, and symlinks (into the
folder, to a file outside it, dangling, in a loop). After it: every node that was not a regular
file is still what it was (type, device number, link text), every outside file a symlink
guards still holds what it held, and /dev/null is still the null device (`changes`). A run
folder holding a manifest of two or more runs must name the run of every output beside it
(`unmarked_outputs`). Figures must be in the format their suffix names (`wrong_format`); a
JSON report must not give a stage more replicas, or a step more micro-batches, than its batch
has samples (`impossible_figure`); a command gives one verdict (`two_verdicts`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from hps.config.files import atomic_write_text

MEMORY_LIMIT_BYTES = 8 * 2**30
"""Address space of one hps process under the sweep: a case that would take more (a plan of
10^8 samples, an input read from /dev/zero) fails alone instead of taking the machine."""
OUTSIDE_TEXT = "a file outside the case's folder\n"
"""What every outside file a symlink points at holds before the case."""
SPECIAL_KINDS = (
    "chardev", "full", "fifo", "fifo-reader", "socket", "blockdev", "dir", "link-in", "link-out",
    "link-out-w", "link-dangling", "loop", "link-dir", "link-chardev", "link-fifo",
)  # fmt: skip
"""What `make_special` makes: link-out is an outside file that must stay as it was (a file hps
owns, such as .lock); link-out-w one an output flag may write through."""
TINY_TRAINING = """
from hps.placement.agent.policy import PolicySpec
from hps.placement.agent.train import TrainConfig
from hps.placement.env.generator import InstanceSplit

CONFIG = TrainConfig(split=InstanceSplit("sweep-tiny", 4, 6, 2, 3, salt=5), num_envs=64, updates_per_chunk=2,
                     num_chunks=6, seed=3, policy=PolicySpec(hidden=16))
"""
"""A training run of six chunks of two updates (about a minute, most of it compiling)."""
CHUNKS = 6
MAGIC = {".png": b"\x89PNG", ".pdf": b"%PDF", ".svg": b"<"}


def limit_child() -> None:
    """In the child before exec: at most MEMORY_LIMIT_BYTES of address space."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def hps_command(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "hps.cli.main", *argv]


def start_hps(argv: list[str], cwd: Path, log: str | None = None, command: list[str] | None = None) -> subprocess.Popen:
    """`hps argv` (or `command`, a whole command line) started in `cwd`, standard input from
    /dev/null, under `limit_child`; its output in pipes, or in files `log`.out and `log`.err of
    `cwd` (a pipe nobody reads would stop it once full)."""
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    if log is not None:
        streams = {"stdout": (cwd / f"{log}.out").open("wb"), "stderr": (cwd / f"{log}.err").open("wb")}
    command = command or hps_command(argv)
    return subprocess.Popen(
        command, cwd=cwd, stdin=subprocess.DEVNULL, preexec_fn=limit_child, env=child_env(), **streams
    )  # fmt: skip


def child_env() -> dict[str, str]:
    """This process's environment with the repository on PYTHONPATH: the cases' experiment files
    import `tools.hostile`, which is the repository's, not the wheel's."""
    root = str(Path(__file__).resolve().parents[2])
    paths = [root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}


def run_hps(
    argv: list[str], cwd: Path, timeout: float, pipe: int | None = None, command: list[str] | None = None
) -> dict:
    """Run `hps argv` (or `command`) in `cwd`: {"rc", "out", "err", "seconds", "hung"}. pipe:
    read that many bytes of standard output, then close it (as `| head -c N` does)."""
    started = time.perf_counter()
    process = start_hps(argv, cwd, command=command)
    head = b""
    if pipe is not None:
        head = process.stdout.read(pipe) if pipe else b""
        process.stdout.close()
        process.stdout = None
    try:
        out, err = process.communicate(timeout=timeout)
        hung = False
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        hung = True
    text = {"out": (head + (out or b"")).decode(errors="replace"), "err": (err or b"").decode(errors="replace")}
    return {"rc": None if hung else process.returncode, **text, "seconds": time.perf_counter() - started, "hung": hung}


def write_case_file(path: Path, content: str | bytes) -> None:
    """A case's input file: text through the atomic writer, bytes (another encoding) as they are."""
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        atomic_write_text(path, content)


def copy_run_folder(folder: Path, to: Path) -> None:
    """A trained run folder copied for one case, links kept as links."""
    shutil.copytree(folder, to, symlinks=True)


def make_special(cwd: Path, outside: Path, name: str, kind: str) -> int | None:
    """Make `name` in `cwd` as `kind` (SPECIAL_KINDS); returns a FIFO reader's descriptor."""
    path = cwd / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind in ("chardev", "full"):
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3 if kind == "chardev" else 7))
    elif kind in ("fifo", "fifo-reader"):
        os.mkfifo(path)
        if kind == "fifo-reader":
            reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, 2**20)
            return reader
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    elif kind == "blockdev":
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(250, 250))
    elif kind == "dir":
        path.mkdir()
    elif kind in ("link-out", "link-out-w"):
        target = outside / f"{name.replace('/', '_')}.target"
        atomic_write_text(target, OUTSIDE_TEXT)
        os.symlink(target, path)
    else:
        target = {"link-in": "inside.target", "link-dangling": "missing.target", "loop": name + ".2",
                  "link-dir": "adir", "link-chardev": "device", "link-fifo": "pipe"}[kind]  # fmt: skip
        if kind == "link-in":
            atomic_write_text(cwd / target, OUTSIDE_TEXT)
        elif kind == "loop":
            os.symlink(name, cwd / target)
        elif kind == "link-dir":
            (cwd / target).mkdir(exist_ok=True)
        elif kind in ("link-chardev", "link-fifo"):
            make_special(cwd, outside, target, "chardev" if kind == "link-chardev" else "fifo")
        os.symlink(target, path)
    return None


def snapshot(cwd: Path, outside: Path) -> dict[str, tuple]:
    """Every node under `cwd` that is not a regular file or folder: (type, device, link text);
    every file in `outside` that a link-out guards: ("guarded", digest); /dev/null's identity."""
    nodes: dict[str, tuple] = {}
    for path in [cwd, *cwd.rglob("*")]:
        info = os.lstat(path)
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            link = os.readlink(path) if stat.S_ISLNK(info.st_mode) else None
            nodes[str(path.relative_to(cwd))] = (stat.S_IFMT(info.st_mode), info.st_rdev, link)
    for path in outside.glob("*.target"):
        nodes[f"outside/{path.name}"] = ("guarded", hashlib.sha256(path.read_bytes()).hexdigest())
    null = os.lstat("/dev/null")
    nodes["/dev/null"] = (stat.S_IFMT(null.st_mode), null.st_rdev, None)
    return nodes


def changes(before: dict[str, tuple], cwd: Path, outside: Path, written: set[str]) -> str | None:
    """What no longer is as `before` recorded, or None; `written`: outside files an output
    flag may write through to."""
    after = snapshot(cwd, outside)
    for name, was in before.items():
        now = after.get(name)
        if now != was and not (was[0] == "guarded" and name.removeprefix("outside/") in written):
            return f"{name}: was {_describe(was)}, now {_describe(now)}"
    return None


def _describe(node: tuple | None) -> str:
    if node is None:
        return "gone"
    if node[0] == "guarded":
        return "the outside file as made" if node[1] == hashlib.sha256(OUTSIDE_TEXT.encode()).hexdigest() else "changed"
    kind = {stat.S_IFCHR: "a character device", stat.S_IFIFO: "a FIFO", stat.S_IFLNK: "a symlink",
            stat.S_IFSOCK: "a socket", stat.S_IFBLK: "a block device"}.get(node[0], "a regular file")  # fmt: skip
    return kind + (f" to {node[2]}" if node[2] else "")


def drain(reader: int) -> None:
    """Read what a FIFO reader holds and close it."""
    try:
        while os.read(reader, 2**16):
            pass
    except BlockingIOError:
        pass
    os.close(reader)


def unmarked_outputs(cwd: Path) -> str | None:
    """An output beside the outputs of another run that the folder's manifest.json does not
    attribute to a run it lists, or None. Folders without a manifest, or with one run, pass."""
    for manifest in cwd.rglob("manifest.json"):
        if manifest.is_symlink() or not manifest.is_file():
            continue  # a case's own link where a manifest belongs: the special-file check's
        try:
            document = json.loads(manifest.read_text())
        except (OSError, ValueError):
            return f"{manifest.relative_to(cwd)} is not JSON"
        runs = {run.get("run_id") for run in document.get("runs", []) if isinstance(run, dict)}
        if len(runs) < 2:
            continue
        outputs = document.get("outputs", {})
        for path in manifest.parent.iterdir():
            if path.name.startswith(".") or path.name in ("manifest.json", "metrics.jsonl", "checkpoints"):
                continue
            if outputs.get(path.name) not in runs:
                return f"{path.relative_to(cwd)} is beside {len(runs)} runs' outputs with no run named for it"
    return None


def wrong_format(cwd: Path, argv: list[str]) -> str | None:
    """A figure written as a regular file whose bytes are not the format its suffix names."""
    for flag, value in zip(argv, argv[1:], strict=False):
        path = cwd / value
        magic = MAGIC.get(path.suffix.lower())
        if flag == "--plot" and magic and path.is_file() and not path.is_symlink():
            if not path.read_bytes().lstrip()[: len(magic)] == magic:
                return f"{value} does not hold {path.suffix} bytes"
    return None


def impossible_figure(out: str) -> str | None:
    """A JSON report giving a stage more replicas, or a step more micro-batches, than the batch
    has samples (a report that is not JSON passes)."""
    try:
        report = json.loads(out)
    except ValueError:
        return None
    batch = _find(report, "batch")
    if not isinstance(batch, (int, float)) or isinstance(batch, bool):
        return None
    for stage in _find(report, "stages") or []:
        replicas = stage.get("replicas", stage.get("dp")) if isinstance(stage, dict) else None
        if isinstance(replicas, (int, float)) and replicas > batch:
            return f"a stage of {replicas:g} replicas for a batch of {batch:g}"
    micro = _find(report, "micro_batches")
    if isinstance(micro, (int, float)) and not isinstance(micro, bool) and micro > batch:
        return f"{micro:g} micro-batches of a batch of {batch:g}"
    return None


def _find(document, key: str):
    """The first value of `key` in a JSON document, searched breadth first."""
    queue = [document]
    while queue:
        node = queue.pop(0)
        if isinstance(node, dict):
            if key in node:
                return node[key]
            queue += list(node.values())
        elif isinstance(node, list):
            queue += node
    return None


def two_verdicts(out: str) -> str | None:
    """A plan printed as feasible, then 'no feasible plan' (or the reverse) in one output."""
    said_feasible = any(line.strip() == "feasible" for line in out.splitlines()) or '"feasible": true' in out
    said_not = "no feasible plan" in out.lower() or '"feasible": false' in out
    return "the output says both feasible and no feasible plan" if said_feasible and said_not else None
