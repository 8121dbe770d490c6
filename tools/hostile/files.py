"""The sweep's cases about files: outputs that are not plain files, inputs that are not regular
files, deeply nested and oversized inputs, and plan files edited by hand.

Keys beyond `hostile_cases`' (`group`, `argv`, `files`, `steps`), each optional:
`special` ({name: kind of `hostile_setup.SPECIAL_KINDS`}, made in the working folder first),
`fixture` ("placement" or "collective": a trained run folder copied to `ck/` first), `timeout`
(seconds past which the case is a hang), `expect` ("refusal": exit 0 is silently accepting
what no run can honour), `not_said` (a regular expression a refusal must not match: the
message misleads), `check` (names of post-conditions: "format", "batch", "verdict"), `escape`
(bidi controls printed raw count too) and `pipe` (bytes read before standard output closes).
"""

from __future__ import annotations

import json

from tools.hostile.cases import network_text, small_catalog, workload_text
from tools.hostile.setup import TINY_TRAINING

MISLEADING_MISSING = r"(?i)no such file|not found|does not exist"
EXECUTE = ["execute", "--catalog", "small", "--workload", "mlp", "--schedule", "cpu,cpu,cpu,cpu", "--steps", "1"]
PLOT = ["collective", "--network", "2d-nvlink-ethernet-8x4", "--size", "1MiB", "--chunks", "4", "--plot"]
OUTPUTS = {  # the cheapest command of each output flag, and the suffix it takes
    "export": (["workload", "export", "mlp", "--out"], ".toml"),
    "search": (["search", "--workload", "mlp", "--catalog", "small", "--parallel", "--out"], ".json"),
    "plot": (PLOT, ".png"),
    "execute": ([*EXECUTE, "--out"], ".json"),
    "profile": (["profile", "--workload", "mlp", "--catalog", "small", "--repeats", "1", "--out"], ".toml"),
    "derive": (["workload", "derive", "ctr-dnn-small", "--out"], ".toml"),
    "plan": (["plan", "--workload", "mlp", "--catalog", "small", "--checkpoint", "ck", "--out"], ".json"),
}
NODE_KINDS = ("chardev", "full", "fifo", "fifo-reader", "socket", "blockdev", "dir", "link-in", "link-out-w",
              "link-dangling", "loop", "link-dir", "link-chardev", "link-fifo")  # fmt: skip
PATH_KINDS = {"under-file": "plain.txt/o{}", "slash": "o{}/", "stdout": "/dev/stdout", "proc-fd": "/proc/self/fd/1"}
SOME_KINDS = {"derive": ("chardev", "full", "fifo-reader", "link-out-w", "dir", "stdout"),
              "plan": ("chardev", "full", "fifo-reader")}  # fmt: skip
"""The slower commands get the kinds that write, not every kind."""


def output_case(command: str, kind: str, suffix: str | None = None, group: str = "special output") -> dict:
    """`command`'s output flag given a `kind` of node or path."""
    prefix, default = OUTPUTS[command]
    suffix = suffix or default
    case = {"group": group, "files": {}, "special": {}, "timeout": 45.0 if command == "plan" else 20.0}
    if kind in PATH_KINDS:
        case["argv"] = [*prefix, PATH_KINDS[kind].format(suffix)]
        case["files"] = {"plain.txt": "a regular file\n"} if kind == "under-file" else {}
    else:
        case["argv"] = [*prefix, f"o{suffix}"]
        case["special"] = {f"o{suffix}": kind}
    if command == "plan":
        case["fixture"] = "placement"
    if command == "plot":
        case["check"] = ["format"]
    return case


def output_cases() -> list[dict]:
    cases = []
    for command in OUTPUTS:
        for kind in SOME_KINDS.get(command, (*NODE_KINDS, *PATH_KINDS)):
            cases.append(output_case(command, kind))
    for suffix in (".pdf", ".svg"):
        for kind in ("chardev", "fifo-reader", "link-out-w", "link-in"):
            cases.append(output_case("plot", kind, suffix, "figure format"))
    for name in ("g.pdf", "g.svg", "g.jpg", "g.txt", "g.eps", "g", "G.PNG", "g.png.pdf"):
        cases.append({"group": "figure format", "argv": [*PLOT, name], "files": {}, "check": ["format"]})
    return cases


MINI_EXPERIMENT = """
from tools.hostile.sweep import HostileSweepConfig


def config() -> HostileSweepConfig:
    return HostileSweepConfig(name="mini", cases="new", groups=("broken pipe",), timeout_s=30.0)
"""
"""An experiment of a few seconds for `hps run`: the sweep's own broken-pipe cases."""
RUN_FOLDER_COMMANDS = {
    "train": (["train", "tiny.py", "--eval-every", "0", "--out"], {"tiny.py": TINY_TRAINING}),
    "run": (["run", "mini.py", "--out"], {"mini.py": MINI_EXPERIMENT}),
    "quickstart": (["quickstart", "--chunks", "1", "--envs", "64", "--workloads", "mlp", "--out"], {}),
}


def run_folder_output_cases() -> list[dict]:
    """A run folder's --out given a node that is not a folder: refused before any work."""
    cases = []
    for prefix, files in RUN_FOLDER_COMMANDS.values():
        for kind in ("chardev", "fifo", "socket", "loop", "link-dangling", "under-file", "file"):
            case = {"group": "special run folder", "argv": [*prefix, "r"], "files": dict(files), "timeout": 30.0}
            if kind == "under-file":
                case["argv"][-1] = "plain.txt/r"
                case["files"]["plain.txt"] = "a regular file\n"
            elif kind == "file":
                case["files"]["r"] = "a regular file\n"
            else:
                case["special"] = {"r": kind}
            cases.append(case)
    return cases


INPUT_KINDS = ("fifo", "link-fifo", "/dev/zero", "dir", "loop", "/dev/stdin", "chardev", "link-dangling", "socket")
INPUTS = {  # a command reading one input file, the file's name in the case's folder
    "catalog": (["search", "--method", "exact", "--workload", "mlp", "--catalog"], "cat.toml"),
    "workload": (["search", "--method", "exact", "--catalog", "small", "--workload"], "w.toml"),
    "network": (["collective", "--size", "1MiB", "--network"], "net.toml"),
    "plan": (["evaluate", "--plan"], "p.json"),
    "execute plan": (["execute", "--steps", "1"], "plan.json"),
    "train": (["train", "--out", "r", "--eval-every", "0"], "exp.py"),
    "run": (["run", "--out", "r"], "exp.py"),
}
PLAN_CHECKPOINT = ["plan", "--workload", "mlp", "--catalog", "small", "--checkpoint"]
FEW_INPUTS = {
    "checkpoint": (PLAN_CHECKPOINT, "ckpt", ("fifo", "dir", "/dev/zero", "loop", "chardev")),
    "factory": (["workload", "derive"], "mod.py", ("fifo", "dir", "/dev/zero", "loop")),
}


def input_case(prefix: list[str], name: str, kind: str) -> dict:
    suffix = ":make" if prefix[:2] == ["workload", "derive"] else ""
    case = {"group": "special input", "files": {}, "timeout": 20.0, "expect": "refusal"}
    if kind.startswith("/dev/"):
        path = kind
    else:
        path = name
        case["special"] = {name: kind}
    case["argv"] = [*prefix, path + suffix]
    if prefix[0] in ("train", "run") and kind.startswith("/dev/"):
        case["argv"] = [*prefix, kind]
    if kind != "link-dangling":
        case["not_said"] = MISLEADING_MISSING
    return case


def input_cases() -> list[dict]:
    cases = [input_case(prefix, name, kind) for prefix, name in INPUTS.values() for kind in INPUT_KINDS]
    cases += [input_case(prefix, name, kind) for prefix, name, kinds in FEW_INPUTS.values() for kind in kinds]
    return cases


def nested_toml(depth: int, tables: bool) -> str:
    """`deep = ` a value nested `depth` deep: inline tables or arrays (valid TOML syntax)."""
    if tables:
        return "deep = " + "{a = " * depth + "1" + "}" * depth + "\n"
    return "deep = " + "[" * depth + "1" + "]" * depth + "\n"


def nested_json(depth: int, objects: bool) -> str:
    return '{"a": ' * depth + "1" + "}" * depth if objects else "[" * depth + "1" + "]" * depth


TOML_INPUTS = {
    "catalog": (INPUTS["catalog"][0], "cat.toml", small_catalog),
    "workload": (INPUTS["workload"][0], "w.toml", workload_text),
    "network": (INPUTS["network"][0], "net.toml", network_text),
}


def nesting_cases() -> list[dict]:
    """Inputs nested past any parser's recursion (5,000 inline tables, 100,000 arrays), and near it."""
    cases = []
    for prefix, name, text in TOML_INPUTS.values():
        for depth, tables in ((100_000, False), (2_000, False), (5_000, True), (600, True)):
            files = {name: nested_toml(depth, tables) + text()}
            cases.append({"group": "deep nesting", "argv": [*prefix, name], "files": files, "expect": "refusal"})
        files = {name: "# padding\n" * 1_800_000 + text()}
        cases.append({"group": "deep nesting", "argv": [*prefix, name], "files": files, "expect": "refusal"})
    for prefix, name in (INPUTS["plan"], INPUTS["execute plan"]):
        for depth, objects in ((100_000, False), (5_000, True), (40, False)):
            files = {name: nested_json(depth, objects)}
            cases.append({"group": "deep nesting", "argv": [*prefix, name], "files": files, "expect": "refusal"})
        files = {name: "[" + "0," * 9_000_000 + "0]"}
        cases.append({"group": "deep nesting", "argv": [*prefix, name], "files": files, "expect": "refusal"})
    return cases


PLAN = {
    "format": "hps-plan/2",
    "workload": "mlp",
    "catalog": "small",
    "job": {
        "batch": 256,
        "micro_batch": 1,
        "throughput": 10000,
        "samples": 10000000,
        "precision": "fp32-adam",
        "zero": 0,
        "recompute": "none",
    },  # fmt: skip
    "stages": [{"first": 0, "last": 3, "type": "cpu", "tp": 1, "dp": 1}],
}
"""A plan file `hps search --parallel --out` writes (hps-plan/2), read by `hps evaluate --plan`."""
EXECUTION_PLAN = {
    "feasible": True,
    "stages": [{"type": "cpu", "first_layer": 0, "last_layer": 3, "replicas": 1, "mode": "replicated"}],
    "schedule": ["cpu", "cpu", "cpu", "cpu"],
    "instance": {
        "workload": "mlp",
        "catalog": "small",
        "batch": 256.0,
        "throughput": 10000.0,
        "samples": 1e7,
        "collective": "themis",
        "chunks": 64,
        "micro_batches": "inf",
        "state_sharding": "none",
        "overrides": [],
    },  # fmt: skip
}
"""A plan `hps plan --out` writes, read by `hps execute PLAN`."""


def edited(plan: dict, path: str, value) -> str:
    """`plan` as JSON with the field at `path` ("job.batch", "stages.0.dp") set to `value`
    (a str starting with '@' is written raw: NaN, Infinity)."""
    document = json.loads(json.dumps(plan))
    *parents, last = path.split(".")
    node = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[int(last) if isinstance(node, list) else last] = (
        "@RAW" if isinstance(value, str) and value[:1] == "@" else value
    )
    return json.dumps(document, indent=1).replace('"@RAW"', str(value)[1:])


PLAN_EDITS = (
    ("extra", 1), ("job.micro_batches", 4), ("stages.0.replicas", 4), ("job.micro_batch", 0),
    ("job.micro_batch", -1), ("job.micro_batch", 1_000_000_000), ("job.micro_batch", 2.5), ("job.micro_batch", "x"),
    ("job.micro_batch", 512), ("job.batch", 1e308), ("job.batch", 0), ("job.batch", "@NaN"), ("job.batch", "@Infinity"),
    ("job.throughput", -1), ("job.precision", "fp64"), ("job.zero", 7), ("stages.0.dp", -5),
    ("stages.0.dp", 1_000_000_000), ("stages.0.dp", 0), ("stages.0.dp", 1.5), ("stages.0.dp", True),
    ("stages.0.tp", 0), ("stages.0.tp", 3), ("stages.0.first", 3), ("stages.0.last", 99), ("stages", []),
    ("stages.0.type", "cpu,gpu-a"), ("stages.0.type", "tpu9"), ("stages.0.type", ""), ("format", "hps-plan/1"),
    ("format", "hps-plan/9"), ("workload", "nope"), ("catalog", "/dev/zero"),
)  # fmt: skip
EXECUTION_EDITS = (
    ("extra", 1), ("instance.extra", 1), ("instance.micro_batches", 0), ("instance.micro_batches", 1000),
    ("stages.0.replicas", -5), ("stages.0.replicas", 1e9), ("stages.0.replicas", 0), ("stages.0.replicas", 2.5),
    ("schedule.0", "cpu,cpu"), ("schedule.0", ""), ("schedule", ["cpu"]), ("schedule.3", "tpu9"),
    ("instance.batch", 1e308), ("instance.batch", 0), ("instance.batch", 1.5), ("instance.chunks", 0),
    ("instance.chunks", 1_000_000_000), ("instance.workload", "nope"), ("instance.overrides", ["hidden="]),
    ("instance.catalog", "/dev/zero"), ("format", "hps-plan/9"), ("stages.0.last_layer", 1),
)  # fmt: skip


def plan_file_cases() -> list[dict]:
    """Plan files edited by hand: unknown keys, fields out of range, another format version."""
    cases = []
    for plan, edits, (prefix, name) in ((PLAN, PLAN_EDITS, INPUTS["plan"]),
                                        (EXECUTION_PLAN, EXECUTION_EDITS, INPUTS["execute plan"])):  # fmt: skip
        for path, value in edits:
            files = {name: edited(plan, path, value)}
            cases.append({"group": "plan file", "argv": [*prefix, name], "files": files, "expect": "refusal"})
        text = json.dumps(plan)
        cases.append({"group": "plan file", "argv": [*prefix, name], "files": {name: "\ufeff" + text}})
        twice = text.replace('"workload"', '"workload": "mlp", "workload"', 1)
        cases.append({"group": "plan file", "argv": [*prefix, name], "files": {name: twice}, "expect": "refusal"})
    return cases


def cases() -> list[dict]:
    """Every case of this module, in report order."""
    builders = (output_cases, run_folder_output_cases, input_cases, nesting_cases, plan_file_cases)
    return [case for build in builders for case in build()]
