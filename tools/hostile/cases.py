"""The cases of the hostile-input sweep: commands with malformed and extreme inputs.

Each case is a dict: `group` (what it tries), `argv` (the hps command line), `files` ({name:
text} written into the case's empty working folder first) and `steps` (None, or the name of a
multi-step procedure of `tools.hostile.sweep`: kill and resume, two runs at once, a damaged
checkpoint). Values are chosen to pass the loaders' syntax checks where they can, so they
exercise what validation lets through: 1e308, 1e-300, 10^9 and 10^20 sizes, nan, inf,
negatives, wrong types, control characters in names.
"""

from __future__ import annotations

import re

from hps.config.loaders import DEFAULTS_KEYS, RESOURCE_KEYS
from hps.config.paths import TOPOLOGIES
from hps.config.types import LAYER_NUMBERS

EXTREMES = ("1e308", "1e-300", "0", "-1", "nan", "inf", '"x"', "100000000000000000000", "1e40")
"""TOML values put in one numeric field at a time."""

RESOURCE_FIELDS = tuple(key for key in RESOURCE_KEYS if key not in ("name", "kind", "dimension"))
LAYER_FIELDS = LAYER_NUMBERS
DEFAULT_FIELDS = DEFAULTS_KEYS
FLAG_VALUES = ("1e308", "1e-300", "0", "-5", "nan", "inf", "abc", "1e40")
SIZES = ("1e40", "1e308", "0", "-1", "1e-300", "nan", "10GiB", "1099511627776TiB")
SET_VALUES = ("layers=1099511627776", "layers=0", "layers=-3", "hidden=1e12", "heads=0", "layers=nan", "ffn=1e30")
NAMES = ("\x1b[31mred\x1b[0m", "tab\tname", "bell\x07", "nul-free\x7f")


def small_catalog() -> str:
    return (TOPOLOGIES / "catalogs" / "small.toml").read_text()


def network_text(size="8", bandwidth="100.0", latency="1000.0", name="net") -> str:
    dimension = '[[dimension]]\nsize = {}\nbandwidth_GiBps = {}\nlatency_ns = {}\nalgorithm = "{}"\n'
    return (
        f'name = "{name}"\n\n'
        + dimension.format(size, bandwidth, latency, "switch")
        + "\n"
        + dimension.format("4", "25.0", "5000.0", "ring")
    )


def workload_text(field: str | None = None, value: str | None = None, name: str = "w") -> str:
    layer = (
        '[[layer]]\nname = "{}"\nkind = "{}"\nflops = {}\nmem_bytes = 1000.0\nio_bytes = 10.0\n'
        "act_bytes = 100.0\ndense_param_bytes = {}\nsparse_param_bytes = {}\n"
    )
    text = f'name = "{name}"\n\n[defaults]\nbatch = 256.0\nthroughput = 1000.0\nsamples = 1000000.0\n\n'
    text += layer.format("emb", "sparse", "100.0", "0.0", "1000000.0") + "\n"
    text += layer.format("fc", "dense", "100000.0", "40000.0", "0.0")
    return text if field is None else _set_first(text, field, value)


def _set_first(text: str, field: str, value: str) -> str:
    """`text` with the first `field = ...` line's value replaced."""
    pattern = rf"^(\s*){field} = [^#\n]*"
    return re.sub(pattern, lambda match: f"{match.group(1)}{field} = {value}", text, count=1, flags=re.M)


def catalog_cases() -> list[dict]:
    cases = []
    for field in RESOURCE_FIELDS:
        for i, value in enumerate(EXTREMES):
            argv = ["search", "--method", "exact", "--catalog", "cat.toml", "--workload", "w.toml"]
            argv += ["--json"] if i % 2 else []
            files = {"cat.toml": _set_first(small_catalog(), field, value), "w.toml": workload_text()}
            cases.append({"group": "catalogue field", "argv": argv, "files": files})
    return cases


def network_cases() -> list[dict]:
    cases = []
    for field, values in (
        ("size", ("1000000000", "100000000000000000000", "10000000", "65537", "0", "-4", "2.5", "nan")),
        ("bandwidth", ("1e-300", "1e308", "0", "-1", "nan", "inf")),
        ("latency", ("1e308", "1e-300", "-1", "nan", "inf", "1e40")),
    ):
        for i, value in enumerate(values):
            argv = ["collective", "--network", "net.toml", "--size", "100MiB", "--policy", "themis"]
            argv += [["--json"], ["--plot", "out.png"], []][i % 3]
            files = {"net.toml": network_text(**{field: value})}
            cases.append({"group": "network field", "argv": argv, "files": files})
    return cases


def workload_cases() -> list[dict]:
    cases = []
    for field in LAYER_FIELDS + DEFAULT_FIELDS:
        for i, value in enumerate(("1e308", "1e-300", "-1", "nan", "inf", '"x"', "1e40")):
            argv = ["search", "--method", "exact", "--catalog", "small", "--workload", "w.toml"]
            argv += ["--json"] if i % 2 else []
            cases.append({"group": "workload field", "argv": argv, "files": {"w.toml": workload_text(field, value)}})
    return cases


def flag_cases() -> list[dict]:
    cases = []
    for flag in ("--batch", "--throughput", "--samples", "--chunks", "--micro-batches"):
        for value in FLAG_VALUES:
            argv = ["search", "--method", "exact", "--catalog", "small", "--workload", "ctr-dnn", flag, value]
            cases.append({"group": "job flag", "argv": argv, "files": {}})
    for i, size in enumerate(SIZES):
        argv = ["collective", "--network", "3d-torus-4x4x4", "--size", size] + (["--json"] if i % 2 else [])
        cases.append({"group": "collective size", "argv": argv, "files": {}})
    for chunks in ("0", "257", "100000000000", "-1", "x"):
        argv = ["collective", "--network", "3d-torus-4x4x4", "--size", "1GiB", "--chunks", chunks]
        cases.append({"group": "collective size", "argv": argv, "files": {}})
    return cases


def size_cases() -> list[dict]:
    cases = []
    for setting in SET_VALUES:
        export = ["workload", "export", "transformer", "--set", setting]
        cases.append({"group": "zoo size", "argv": export, "files": {}})
        argv = ["search", "--method", "exact", "--workload", "transformer", "--set", setting, "--catalog", "small"]
        cases.append({"group": "zoo size", "argv": argv, "files": {}})
    for method in ("greedy", "genetic", "exhaustive", "gradient"):
        argv = ["search", "--method", method, "--workload", "transformer", "--set", "layers=1000"]
        cases.append({"group": "zoo size", "argv": argv, "files": {}})
    return cases


def name_cases() -> list[dict]:
    cases = []
    for name in NAMES:
        escaped = "".join(f"\\u{ord(c):04x}" if ord(c) < 32 or ord(c) == 127 else c for c in name)
        catalog = _set_first(small_catalog(), "name", f'"{escaped}"')
        argv = ["search", "--method", "exact", "--catalog", "cat.toml", "--workload", "ctr-dnn"]
        cases.append({"group": "control characters", "argv": argv, "files": {"cat.toml": catalog}})
        argv = ["collective", "--network", "net.toml", "--size", "1GiB"]
        cases.append({"group": "control characters", "argv": argv, "files": {"net.toml": network_text(name=escaped)}})
    return cases


def file_cases() -> list[dict]:
    """Malformed files and paths: not TOML, empty, a directory, missing, a .toml run as Python."""
    cases = []
    for name, text in (("bad.toml", "name = [unclosed"), ("empty.toml", ""), ("bin.toml", "\x00\x01\x02")):
        for argv in (
            ["search", "--method", "exact", "--catalog", name, "--workload", "ctr-dnn"],
            ["search", "--method", "exact", "--workload", name],
            ["collective", "--network", name, "--size", "1GiB"],
        ):
            cases.append({"group": "malformed file", "argv": argv, "files": {name: text}})
    marker = "import pathlib; pathlib.Path('ran').write_text('x')\n"
    cases.append({"group": "malformed file", "argv": ["train", "x.toml", "--out", "run"], "files": {"x.toml": marker}})
    for argv in (
        ["search", "--workload", "missing.toml"],
        ["plan", "--workload", "ctr-dnn", "--checkpoint", "nowhere"],
        ["workload", "export", "ctr-dnn", "--out", "/proc/x/y.toml"],
        ["workload", "export", "ctr-dnn", "--out", "."],
        ["evaluate", "--workload", "ctr-dnn", "--stages", "0-3:cpu,2-9:gpu"],
        ["evaluate", "--workload", "ctr-dnn", "--stages", "0-3:tpu9"],
    ):
        cases.append({"group": "malformed file", "argv": argv, "files": {}})
    return cases


def command_cases() -> list[dict]:
    """The other commands, each at extreme or malformed values: evaluate, execute, profile,
    bench, quickstart, run, plan, workload derive."""
    execute = ["execute", "--catalog", "small", "--workload", "mlp", "--schedule", "cpu,cpu,cpu,cpu"]
    argvs = [
        ["evaluate", "--catalog", "small", "--workload", "ctr-dnn", "--batch", "1e308", "--stages", "0-6:cpu"],
        ["evaluate", "--catalog", "small", "--workload", "ctr-dnn", "--stages", "0-99:cpu"],
        ["evaluate", "--catalog", "small", "--workload", "ctr-dnn", "--stages", "6-0:cpu"],
        [*execute, "--steps", "-1"],
        [*execute, "--steps", "1000000000000"],
        [*execute, "--lr", "nan"],
        [*execute, "--devices", "cpu=0-99"],
        [*execute, "--micro-batches", "0"],
        [*execute, "--replicas", "0,0,0,0"],
        ["profile", "--catalog", "small", "--workload", "mlp", "--repeats", "0"],
        ["profile", "--catalog", "small", "--workload", "mlp", "--types", "tpu9"],
        ["profile", "--catalog", "small", "--workload", "mlp", "--micro-batch", "-4"],
        ["bench", "placement", "--exact-layers", "100000000"],
        ["bench", "placement", "--exact-types", "0"],
        ["bench", "placement", "--seconds", "nan"],
        ["quickstart", "--chunks", "0", "--out", "qs"],
        ["quickstart", "--envs", "-1", "--out", "qs"],
        ["quickstart", "--workloads", "nope", "--out", "qs"],
        ["run", "missing.py"],
        ["run", "x.toml"],
        ["plan", "--workload", "ctr-dnn", "--catalog", "small", "--checkpoint", ".", "--plans", "0"],
        ["workload", "derive", "x.toml"],
    ]
    files = {"x.toml": "import pathlib; pathlib.Path('ran').write_text('x')\n"}
    return [{"group": "other commands", "argv": argv, "files": files} for argv in argvs]


def run_folder_cases() -> list[dict]:
    """Faults around a training run folder (multi-step procedures of `tools.hostile.sweep`)."""
    steps = ("kill-early", "kill-late", "concurrent", "stale-lock", "flip-state", "flip-spec", "plan-damaged")
    return [{"group": "run folder", "argv": [], "files": {}, "steps": step} for step in steps]


def all_cases() -> list[dict]:
    """Every case, in report order."""
    builders = (catalog_cases, network_cases, workload_cases, flag_cases, size_cases, name_cases, file_cases,
                command_cases)  # fmt: skip
    return [case for build in (*builders, run_folder_cases) for case in build()]
