"""The sweep's cases about values and processes: every numeric flag of every command past its
range, impossible jobs, names that print wrong (bidi controls, names equal after Unicode
normalisation, byte-order marks, repeated keys), empty list entries, standard outputs closed
early, and multi-step procedures (stop signals, two runs at once, links in a run folder).
The keys of a case are described in `hostile_files`.
"""

from __future__ import annotations

from tools.hostile.cases import network_text, small_catalog, workload_text
from tools.hostile.files import EXECUTE, MINI_EXPERIMENT, TOML_INPUTS
from tools.hostile.setup import TINY_TRAINING as TINY

HUGE_SEED = "99999999999999999999"
SEARCH = ["search", "--workload", "mlp", "--catalog", "small"]
TRAIN = ["train", "tiny.py", "--out", "r", "--eval-every", "0"]
PLAN = ["plan", "--workload", "mlp", "--catalog", "small", "--checkpoint", "ck"]
PROFILE = ["profile", "--workload", "mlp", "--catalog", "small", "--repeats", "1"]
ITERATION = ["collective", "--network", "2d-nvlink-ethernet-8x4", "--iteration", "mlp", "--batch-per-npu"]
EVALUATE = ["evaluate", "--workload", "mlp", "--catalog", "small", "--schedule", "cpu,cpu,cpu,cpu"]
QUICKSTART = ["quickstart", "--workloads", "mlp", "--out", "qs"]
FLAG_VALUES = {  # (argv before the value, values, whether exit 0 is a wrong answer)
    "search --evaluations": (
        [*SEARCH, "--method", "random", "--evaluations"],
        ("1000000000000", "0", "-1", "2.5"),
        True,
    ),
    "search --evaluations genetic": ([*SEARCH, "--method", "genetic", "--evaluations"], ("100000000",), False),
    "search --seed": ([*SEARCH, "--method", "random", "--seed"], (HUGE_SEED, "-1", "18446744073709551616"), True),
    "search --seconds": ([*SEARCH, "--method", "exact", "--seconds"], ("1e308", "nan", "inf", "-1", "0"), True),
    "plan --plans": ([*PLAN, "--plans"], ("1000000000", "100000000", "-1"), True),
    "plan --seed": ([*PLAN, "--seed"], (HUGE_SEED, "-1"), True),
    "train --seed": ([*TRAIN, "--seed"], (HUGE_SEED, "-1"), True),
    "train --envs": ([*TRAIN, "--envs"], ("0", "-1", "1000000000000"), True),
    "train --chunks": ([*TRAIN, "--chunks"], ("0", "-1", "1000000000000"), True),
    "train --minutes": ([*TRAIN, "--chunks", "6", "--minutes"], ("nan", "inf", "-1"), True),
    "train --eval-every": ([*TRAIN, "--eval-every"], ("-1", "1000000000000"), True),
    "train --num-processes": ([*TRAIN, "--num-processes"], ("0", "-1", "1000000"), True),
    "train --process-id": ([*TRAIN, "--process-id"], ("-1", "5"), True),
    "execute --seed": ([*EXECUTE, "--seed"], (HUGE_SEED, "-1"), True),
    "execute --lr": ([*EXECUTE, "--check", "--lr"], ("1e30", "1e10", "1e-300"), False),
    "execute --micro-batches": ([*EXECUTE, "--micro-batches"], ("512", "3", "1000000"), True),
    "execute --replicas": ([*EXECUTE, "--replicas"], ("1000000000", "-5", "1e9"), True),
    "execute --batch": ([*EXECUTE, "--batch"], ("0.5", "1e-300", "1e12"), True),
    "profile --seed": ([*PROFILE, "--seed"], (HUGE_SEED,), True),
    "profile --repeats": ([*PROFILE[:-2], "--repeats"], ("1000000000", "-1"), True),
    "profile --micro-batch": ([*PROFILE, "--micro-batch"], ("1000000000000", "0"), True),
    "collective --batch-per-npu": (ITERATION, ("1e12", "1e-300", "nan", "inf", "0", "-1"), True),
    "collective --size": (["collective", "--network", "2d-nvlink-ethernet-8x4", "--size"], ("1.5", "0.5"), True),
    "evaluate --micro-batch": ([*EVALUATE, "--micro-batch"], ("0", "1000000000000"), True),
    "evaluate --batch": ([*EVALUATE, "--batch"], ("1e-300", "0.5"), True),
    "bench --seconds": (["bench", "placement", "--seconds"], ("1e308", "-1", "inf"), True),
    "bench --limit": (["bench", "parallel", "--parallel-layers", "64", "--limit"], ("1e308", "-1"), True),
    "bench grids": (["bench", "placement", "--exact-types"], ("1000000000", "0", "4,,8"), True),
    "quickstart --chunks": ([*QUICKSTART, "--envs", "64", "--chunks"], ("1000000000000", "-1"), True),
    "quickstart --envs": ([*QUICKSTART, "--chunks", "1", "--envs"], ("1000000000000", "3", "0"), True),
    "derive --batch": (["workload", "derive", "ctr-dnn-small", "--batch"], ("0", "-1", "1000000000000"), True),
}
ARGUABLE = {("--seed", "-1"), ("--minutes", "inf"), ("--eval-every", "1000000000000"), ("--seconds", "inf")}
ARGUABLE |= {("--seconds", "1e308"), ("--limit", "1e308")}
"""Values a run is a defensible answer to (a negative seed, no time limit, no evaluation): exit 0
is no failure there, though a hang still is."""
SLOW = {"plan": 45.0, "train": 60.0, "quickstart": 60.0, "bench": 30.0}


def flag_cases() -> list[dict]:
    """Each numeric flag of each command at values past any sensible range."""
    cases = []
    for prefix, values, must_refuse in FLAG_VALUES.values():
        for value in values:
            case = {
                "group": "numeric flag",
                "argv": [*prefix, value],
                "files": {},
                "timeout": SLOW.get(prefix[0], 20.0),
            }
            case["files"] = {"tiny.py": TINY} if prefix[0] == "train" else {}
            if prefix[0] == "plan":
                case["fixture"] = "placement"
            if must_refuse and (prefix[-1], value) not in ARGUABLE:
                case["expect"] = "refusal"
            cases.append(case)
    exact = ["search", "--workload", "dlrm", "--catalog", "cloud-2024", "--method", "exact", "--seconds", "1e-9"]
    cases += [
        {"group": "numeric flag", "argv": argv, "files": {}, "check": ["verdict"]}
        for argv in (exact, [*exact, "--json"])
    ]
    minutes = {"group": "numeric flag", "argv": [*TRAIN, "--minutes", "1e-9"], "files": {"tiny.py": TINY}}
    cases.append({**minutes, "timeout": 120.0, "check": ["checkpoint"]})
    return cases


def impossible_cases() -> list[dict]:
    """Jobs no cluster can run: more micro-batches or replicas than the batch has samples."""
    cases = []
    for batch, micro in (("8", "1000"), ("8", "9"), ("1", "2")):
        for prefix in (["search", "--method", "exact", "--workload", "mlp", "--catalog", "small"], EVALUATE):
            argv = [*prefix, "--batch", batch, "--micro-batches", micro, "--json"]
            cases.append({"group": "impossible job", "argv": argv, "files": {}, "expect": "refusal"})
    for throughput in ("1e7", "1e8"):
        for method in ("exact", "exhaustive", "greedy"):
            argv = ["search", "--method", method, "--workload", "ctr-dnn", "--catalog", "small", "--batch", "1"]
            argv += ["--throughput", throughput, "--json"]
            cases.append({"group": "impossible job", "argv": argv, "files": {}, "check": ["batch"]})
    parallel = ["search", "--workload", "mlp", "--catalog", "small", "--parallel", "--json"]
    for flags in (["--micro-batch", "512"], ["--batch", "2", "--micro-batch", "4"], ["--batch", "3"]):
        cases.append({"group": "impossible job", "argv": [*parallel, *flags], "files": {}, "check": ["batch"]})
    return cases


BIDI = ("\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u061c", "\u2028")


def _escaped(name: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if not c.isascii() or ord(c) < 32 else c for c in name)


def _catalog_with_names(first: str, second: str = "gpu-a") -> str:
    text = small_catalog().replace('name = "cpu"', f'name = "{_escaped(first)}"', 1)
    return text.replace('name = "gpu-a"', f'name = "{_escaped(second)}"', 1)


def name_cases() -> list[dict]:
    """Bidi controls in every kind of name; two names equal after Unicode normalisation."""
    cases = []
    search = ["search", "--method", "exact", "--workload", "mlp", "--catalog", "cat.toml"]
    for mark in BIDI:
        name = f"evil{mark}txt.exe"
        files = {"cat.toml": small_catalog().replace('name = "small"', f'name = "{_escaped(name)}"')}
        cases.append({"group": "bidi names", "argv": search, "files": files, "escape": True})
        cases.append(
            {"group": "bidi names", "argv": search, "files": {"cat.toml": _catalog_with_names(name)}, "escape": True}
        )
        files = {"net.toml": network_text(name=_escaped(name))}
        cases.append(
            {
                "group": "bidi names",
                "argv": ["collective", "--network", "net.toml", "--size", "1MiB"],
                "files": files,
                "escape": True,
            }
        )
    for argv in (
        ["search", "--workload", "mlp\u202e"],
        ["workload", "export", "\u202emlp"],
        [*EVALUATE[:-1], "cpu,cpu,cpu,\u202ecpu"],
        ["search", "--catalog", "sm\u2067all", "--workload", "mlp"],
    ):
        cases.append({"group": "bidi names", "argv": argv, "files": {}, "escape": True})
    w = workload_text(name=_escaped("w\u202e"))
    cases.append(
        {
            "group": "bidi names",
            "argv": ["search", "--method", "exact", "--catalog", "small", "--workload", "w.toml"],
            "files": {"w.toml": w},
            "escape": True,
        }
    )
    for first, second in (
        ("caf\u00e9", "cafe\u0301"),
        ("\uff43\uff50\uff55", "cpu"),
        ("\u212b", "\u00c5"),
        ("\ufb01", "fi"),
    ):
        cases.append(
            {
                "group": "normalised names",
                "argv": search,
                "files": {"cat.toml": _catalog_with_names(first, second)},
                "expect": "refusal",
            }
        )
        layers = workload_text().replace('name = "emb"', f'name = "{_escaped(first)}"')
        layers = layers.replace('name = "fc"', f'name = "{_escaped(second)}"')
        argv = ["search", "--method", "exact", "--catalog", "small", "--workload", "w.toml"]
        cases.append({"group": "normalised names", "argv": argv, "files": {"w.toml": layers}, "expect": "refusal"})
    return cases


def encoding_cases() -> list[dict]:
    """Byte-order marks, repeated keys, other encodings, a measured time for an unknown type."""
    cases = []
    for prefix, name, text in TOML_INPUTS.values():
        argv = [*prefix, name]
        cases.append(
            {"group": "encodings", "argv": argv, "files": {name: "\ufeff" + text()}, "not_said": "Invalid statement"}
        )
        twice = text().replace('name = "', 'name = "twice"\nname = "', 1)
        cases.append({"group": "encodings", "argv": argv, "files": {name: twice}, "expect": "refusal", "said": "name"})
        cases.append({"group": "encodings", "argv": argv, "files": {name: text().replace("\n", "\r\n")}})
        cases.append({"group": "encodings", "argv": argv, "files": {name: text().encode("utf-16")}})
    measured = workload_text() + '[layer.measured_time_s]\n"tpu9" = 0.001\n'
    argv = ["search", "--method", "exact", "--catalog", "small", "--workload", "w.toml"]
    cases.append({"group": "encodings", "argv": argv, "files": {"w.toml": measured}, "expect": "notice"})
    cases.append({"group": "encodings", "argv": [*argv, "--json"], "files": {"w.toml": measured}, "expect": "notice"})
    return cases


def entry_cases() -> list[dict]:
    """Empty entries in list flags, and --set without a value."""
    cases = []
    for schedule in ("cpu,,cpu,cpu", "cpu,cpu,cpu,cpu,", ",cpu,cpu,cpu", "cpu, ,cpu,cpu", ",,,", " "):
        for prefix in (EVALUATE[:-1], EXECUTE[:6]):
            argv = [*prefix, schedule] + (["--steps", "1"] if prefix[0] == "execute" else [])
            cases.append({"group": "empty entry", "argv": argv, "files": {}, "expect": "refusal"})
    for setting in ("hidden=", "=3", "hidden=,", "hidden=64,,32", "hidden= ", "hidden==3"):
        for prefix in (
            ["workload", "export", "mlp"],
            ["search", "--method", "exact", "--catalog", "small", "--workload", "mlp"],
        ):
            case = {"group": "empty entry", "argv": [*prefix, "--set", setting], "files": {}, "expect": "refusal"}
            cases.append({**case, "not_said": "expected NAME=VALUE"} if setting == "hidden=" else case)
    cases.append({"group": "empty entry", "argv": [*EXECUTE, "--replicas", "1,,1"], "files": {}, "expect": "refusal"})
    cases.append({"group": "empty entry", "argv": [*EXECUTE, "--devices", "cpu="], "files": {}, "expect": "refusal"})
    return cases


PIPED = (
    ["workload", "list"],
    ["--help"],
    ["workload", "export", "transformer"],
    ["search", *SEARCH[1:], "--method", "all"],
    [*SEARCH, "--method", "exact", "--json"],
    ["evaluate", *EVALUATE[1:], "--json"],
    [*EVALUATE],
    ["collective", "--network", "2d-nvlink-ethernet-8x4", "--size", "1MiB", "--json"],
    ["collective", "--network", "2d-nvlink-ethernet-8x4", "--size", "1MiB"],
    [*EXECUTE, "--json"],
    ["search", "--workload", "ctr-dnn", "--catalog", "small", "--method", "greedy"],
)


def pipe_cases() -> list[dict]:
    """`hps ... | head -c N`: standard output closed after 0 or 1 bytes."""
    return [{"group": "broken pipe", "argv": argv, "files": {}, "pipe": n} for argv in PIPED for n in (1, 0)]


LEARNED_COLLECTIVE = [
    "collective", "--network", "2d-nvlink-ethernet-8x4", "--size", "1MiB", "--policy", "learned", "--checkpoint", "ck"
]  # fmt: skip
"""`hps collective` with the learned policy of the checkpoint copied to ck/."""


def fixture_cases() -> list[dict]:
    """A checkpoint of one kind given where the other is needed."""
    return [
        {
            "group": "checkpoint kind",
            "argv": [*PLAN],
            "files": {},
            "fixture": "collective",
            "timeout": 45.0,
            "expect": "refusal",
            "not_said": "unknown policy kind",
        },
        {
            "group": "checkpoint kind",
            "argv": LEARNED_COLLECTIVE,
            "files": {},
            "fixture": "placement",
            "timeout": 45.0,
            "expect": "refusal",
        },
        {
            "group": "checkpoint kind",
            "argv": [*EXECUTE, "--policy", "learned", "--checkpoint", "ck"],
            "files": {},
            "fixture": "placement",
            "timeout": 45.0,
            "expect": "refusal",
        },
        {"group": "checkpoint kind", "argv": [*PLAN, "--json"], "files": {}, "fixture": "placement", "timeout": 45.0},
    ]


PROCEDURES = (
    "sigterm-train",
    "sighup-train",
    "sigterm-quickstart",
    "sighup-quickstart",
    "sigterm-run",
    "sighup-run",
    "two-runs",
)
"""The multi-step procedures of `tools.hostile.steps`."""
OWNED_LINKS = (
    (["train", "tiny.py", "--out", "run", "--eval-every", "0"], ("run/.lock", "run/metrics.jsonl", "run/checkpoints")),
    (["run", "mini.py", "--out", "res"], ("res/mini/.lock", "res/mini/manifest.json", "res/mini/items")),
)
"""Files a run folder's own command owns, each made a link to a file outside the folder."""


def procedure_cases() -> list[dict]:
    files = {"tiny.py": TINY, "mini.py": MINI_EXPERIMENT}
    cases = [{"group": "signals and run folders", "argv": [], "files": files, "steps": step} for step in PROCEDURES]
    for argv, names in OWNED_LINKS:
        for name in names:
            case = {"group": "signals and run folders", "argv": argv, "files": files, "special": {name: "link-out"}}
            cases.append({**case, "timeout": 150.0})
    return cases


def cases() -> list[dict]:
    """Every case of this module, in report order."""
    builders = (
        flag_cases,
        impossible_cases,
        name_cases,
        encoding_cases,
        entry_cases,
        pipe_cases,
        fixture_cases,
        procedure_cases,
    )
    return [case for build in builders for case in build()]
