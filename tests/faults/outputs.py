"""Outputs that are not plain files, and a standard output nobody reads.

Run as root on scratch special files in tmp_path: a character device (a copy of /dev/null made
with mknod), a FIFO and symlinks. Every output flag writes into a device or a FIFO a reader
holds open, writes through a symlink to its target (the link stays a link), and never replaces
the node; a FIFO without a reader, a block device, a directory or a path under a file is
refused with one error line. Figures are written in the format their suffix names. A command
whose standard output is closed ends quietly with status 141."""

from __future__ import annotations

import ast
import fcntl
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hps.cli.main import CLOSED_STDOUT_STATUS, main
from hps.config.files import atomic_write_text, check_output_path
from hps.errors import ConfigError
from tests.helpers import called_name, run_cli_output

REPO = Path(__file__).resolve().parents[2]
PODS = str(REPO / "tests" / "data" / "pods.toml")
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")

EXPORT = ["workload", "export", "mlp", "--out"]
PLOT = ["collective", "--network", "2d-nvlink-ethernet-8x4", "--size", "1MiB", "--chunks", "4", "--plot"]
SEARCH = ["search", "--workload", "ctr-dnn", "--catalog", "cloud-2024", "--parallel", "--out"]
EXECUTE = ["execute", "--workload", "mlp", "--catalog", PODS, "--schedule", "cpu,cpu,cpu,cpu", "--batch", "32"]
OUTPUT_FLAGS = {
    "workload export --out": (EXPORT, ".toml"),
    "collective --plot": (PLOT, ".png"),
    "search --out": (SEARCH, ".json"),
    "execute --out": ([*EXECUTE, "--steps", "1", "--out"], ".json"),
    "profile --out": (["profile", "--workload", "mlp", "--catalog", PODS, "--out"], ".toml"),
}
"""Every output flag that names a file, as the cheapest command that writes it, and a suffix it
takes. (`workload derive --out` writes through the same `write_workload` as export, `plan
--out` through the same `write_json` as execute and search.)"""


def char_device(path: Path) -> Path:
    """A scratch copy of /dev/null at `path`."""
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


def reading_fifo(path: Path) -> int:
    """A FIFO at `path` and the descriptor of a reader holding it open (non-blocking, with a
    1 MiB buffer, so a whole figure fits before anyone reads)."""
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, 2**20)
    return reader


def drain(reader: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(reader, 2**16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(reader)
    return b"".join(chunks)


def run(argv: list[str], capsys) -> tuple[int, str]:
    code, _, err = run_cli_output(argv, capsys)
    assert "Traceback" not in err
    return code, err


# ------------------------------------------------------------------ special files


@AS_ROOT
@pytest.mark.parametrize("name", OUTPUT_FLAGS)
def test_an_output_flag_writes_into_a_character_device_and_leaves_the_node(tmp_path, capsys, name):
    argv, suffix = OUTPUT_FLAGS[name]
    device = char_device(tmp_path / f"null{suffix}")
    assert run([*argv, str(device)], capsys)[0] == 0
    assert stat.S_ISCHR(os.lstat(device).st_mode) and os.lstat(device).st_rdev == os.makedev(1, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == [device.name]  # no temporary file left


@pytest.mark.parametrize("name", ["workload export --out", "collective --plot", "search --out"])
def test_an_output_flag_writes_into_a_fifo_its_reader_holds_and_leaves_the_fifo(tmp_path, capsys, name):
    argv, suffix = OUTPUT_FLAGS[name]
    fifo = tmp_path / f"pipe{suffix}"
    reader = reading_fifo(fifo)
    assert run([*argv, str(fifo)], capsys)[0] == 0
    received = drain(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    start = {".toml": b"name = ", ".png": b"\x89PNG", ".json": b"{"}[suffix]
    assert received.startswith(start) and len(received) > 100


def test_a_fifo_nobody_reads_is_refused_at_once_and_left_a_fifo(tmp_path, capsys):
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    code, err = run([*EXPORT, str(fifo)], capsys)
    assert code == 2 and "hps workload: error:" in err and "a FIFO that no process reads" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("name", ["workload export --out", "collective --plot"])
def test_an_output_symlink_is_written_through_and_stays_a_link(tmp_path, capsys, name):
    argv, suffix = OUTPUT_FLAGS[name]
    target = tmp_path / "elsewhere" / f"target{suffix}"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / f"link{suffix}"
    link.symlink_to(target)
    assert run([*argv, str(link)], capsys)[0] == 0
    assert os.path.islink(link) and os.readlink(link) == str(target)
    assert target.read_bytes() != b"old" and len(target.read_bytes()) > 100
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


@AS_ROOT
def test_a_symlink_to_a_device_writes_into_the_device_and_keeps_both(tmp_path, capsys):
    device = char_device(tmp_path / "null")
    link = tmp_path / "link.toml"
    link.symlink_to(device)
    assert run([*EXPORT, str(link)], capsys)[0] == 0
    assert os.path.islink(link) and stat.S_ISCHR(os.lstat(device).st_mode)


def test_a_dangling_symlink_gets_its_target_created_and_stays_a_link(tmp_path, capsys):
    link = tmp_path / "link.toml"
    link.symlink_to(tmp_path / "made.toml")
    assert run([*EXPORT, str(link)], capsys)[0] == 0
    assert os.path.islink(link) and (tmp_path / "made.toml").read_text().startswith("name = ")


def test_a_symlink_loop_is_refused_naming_the_flag(tmp_path, capsys):
    (tmp_path / "a.toml").symlink_to(tmp_path / "b.toml")
    (tmp_path / "b.toml").symlink_to(tmp_path / "a.toml")
    code, err = run([*EXPORT, str(tmp_path / "a.toml")], capsys)
    assert code == 2 and "--out" in err and "symbolic links" in err
    assert os.path.islink(tmp_path / "a.toml") and os.path.islink(tmp_path / "b.toml")


@AS_ROOT
def test_a_block_device_or_a_socket_is_refused_by_the_writer_and_left_as_it_was(tmp_path):
    block = tmp_path / "block"
    os.mknod(block, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "sock"))
    try:
        for path, kind in ((block, "a block device"), (tmp_path / "sock", "a socket")):
            with pytest.raises(ConfigError, match=f"--out: .* is {kind}"):
                check_output_path(path, "--out")
            with pytest.raises(ConfigError, match=kind):
                atomic_write_text(path, "x")
        assert stat.S_ISBLK(os.lstat(block).st_mode) and stat.S_ISSOCK(os.lstat(tmp_path / "sock").st_mode)
    finally:
        listener.close()


def hps_process(argv: list[str], stdout) -> subprocess.CompletedProcess:
    """`hps ARGV` in a fresh process with `stdout` (a descriptor or a file) as standard output."""
    command = [sys.executable, "-m", "hps.cli.main", *argv]
    return subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, cwd=REPO)


def test_the_standard_output_named_as_an_output_is_written_into_a_pipe_or_a_file_in_order(tmp_path):
    """`--out /dev/fd/1` (or /dev/stdout) reaches whatever standard output has open, after what
    the command printed there; the file a shell redirected it to is the same file after."""
    piped = hps_process([*SEARCH, "/dev/fd/1"], subprocess.PIPE)
    assert piped.returncode == 0 and "Traceback" not in piped.stderr
    assert piped.stdout.count('"format": "hps-plan/3"') == 1
    assert piped.stdout.index('"format"') < piped.stdout.index("\nfeasible\n")  # written, then the report printed
    redirected = tmp_path / "out.txt"
    with redirected.open("w") as stream:
        inode = os.fstat(stream.fileno()).st_ino
        done = hps_process([*EXPORT, "/dev/fd/1"], stream)
    assert done.returncode == 0 and os.stat(redirected).st_ino == inode
    assert redirected.read_text().startswith('name = "mlp"')


# ------------------------------------------------------------------ paths that are not files


@pytest.mark.parametrize("name", ["workload export --out", "collective --plot", "search --out"])
def test_a_directory_a_path_under_a_file_or_a_name_ending_in_a_slash_is_refused(tmp_path, capsys, name):
    argv, suffix = OUTPUT_FLAGS[name]
    (tmp_path / f"file{suffix}").write_text("kept")
    flag = argv[-1]
    cases = [
        (tmp_path, "is a directory"),
        (tmp_path / f"file{suffix}" / f"x{suffix}", "is not a directory"),
        (f"{tmp_path / f'new{suffix}'}/", "names a directory"),
    ]
    for path, problem in cases:
        code, err = run([*argv, str(path)], capsys)
        assert code == 2 and f"error: {flag}:" in err and problem in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"file{suffix}"]


# ------------------------------------------------------------------ figure formats


def test_a_figure_is_written_in_the_format_its_suffix_names(tmp_path, capsys):
    magic = {"g.pdf": b"%PDF", "g.svg": b"<?xml", "g.PNG": b"\x89PNG"}
    for name, start in magic.items():
        assert run([*PLOT, str(tmp_path / name)], capsys)[0] == 0
        assert (tmp_path / name).read_bytes().startswith(start), name


@pytest.mark.parametrize("name", ["g.jpg", "g", "g.png.bak"])
def test_a_figure_with_an_unknown_suffix_is_refused_listing_the_known_ones(tmp_path, capsys, name):
    code, err = run([*PLOT, str(tmp_path / name)], capsys)
    assert code == 2 and "hps collective: error: --plot:" in err and ".png, .pdf, .svg" in err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ one writer


DIRECT_WRITERS = {"write_text", "write_bytes", "savefig", "dump", "save", "savez", "savetxt", "to_csv", "copyfile"}
DIRECT_WRITERS |= {"copy2", "copytree", "rename", "symlink_to", "hardlink_to", "touch"}
"""Calls that write a file by any name (`json.dump`, `np.save`, `fig.savefig`, `Path.write_text`, ...)."""
OS_WRITERS = {"os.replace", "os.rename", "os.symlink", "os.link", "shutil.copy", "shutil.move", "os.mkfifo"}
WRITE_MODES = set("wax+")
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"}
WRITER_HOMES = {
    "hps/config/files.py",
    "hps/io/figures.py",
    "tools/hostile/sweep.py",
    "tools/hostile/setup.py",
}
"""The one writer; save_figure, whose savefig writes the writer's temporary file; and the hostile
sweep (which flips checkpoint bytes in place on purpose, and makes the devices, FIFOs and links
its cases write to)."""
RUN_FOLDER_INTERNALS = ("hps/rl/", "hps/io/runfolder/")
"""Files a run folder owns (lock, manifest, free-space probe, metrics, orbax checkpoints), opened
by their own rules (never following a symlink)."""
ATOMIC = {"checkpoint.save"}
"""hps.rl.checkpoint.save: orbax writes a step to a temporary folder and renames it."""


def _writes_a_file(node: ast.Call) -> bool:
    name = called_name(node)
    tail = name.rpartition(".")[2]
    if name == "os.open":
        return bool(WRITE_FLAGS & {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)})
    if tail == "open":
        modes = [k.value for k in node.keywords if k.arg == "mode"] + node.args[0 if name != "open" else 1 :][:1]
        return any(isinstance(m, ast.Constant) and WRITE_MODES & set(str(m.value)) for m in modes)
    return name in OS_WRITERS or (tail in DIRECT_WRITERS and name not in ATOMIC)


def test_every_file_hps_writes_goes_through_the_one_writer():
    found = []
    for path in sorted((REPO / "hps").rglob("*.py")):
        where = str(path.relative_to(REPO))
        if where in WRITER_HOMES or where.startswith(RUN_FOLDER_INTERNALS):
            continue
        for node in ast.walk(ast.parse(path.read_text(), where)):
            quiet_stdout = "os.devnull" in ast.unparse(node)  # the CLI's closed-pipe exit
            if isinstance(node, ast.Call) and _writes_a_file(node) and not quiet_stdout:
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


# ------------------------------------------------------------------ a closed standard output


def test_a_closed_stdout_ends_the_command_quietly_with_status_141():
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = hps_process(["workload", "list"], writer)
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (CLOSED_STDOUT_STATUS, "")


class ClosedPipe:
    """A standard output whose reader has gone: every write is EPIPE."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--workload", "mlp", "--catalog", PODS, "--schedule", "cpu,cpu,cpu,cpu", "--json"],
        SEARCH[:-1],
        ["workload", "export", "mlp"],
    ],
)
def test_a_command_whose_stdout_reader_has_gone_returns_141_without_a_traceback(monkeypatch, capsys, argv):
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(argv) == CLOSED_STDOUT_STATUS
    err = capsys.readouterr().err  # a progress bar at most
    assert "Traceback" not in err and "Error" not in err and "error" not in err
