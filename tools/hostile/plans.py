"""The sweep's cases about the surfaces of plan format hps-plan/3 and the clocks: plan files edited
by hand (every /3 key at its extremes and of the wrong type, the workload's and catalogue's
recorded SHA-256, /2 files with /3 keys, /3 files with unknown keys, FP8 on types without an FP8
peak, a stage with fewer pipeline units than its virtual stages) fed to `hps evaluate --plan`,
`hps execute PLAN.json` and `hps export PLAN.json --to FRAMEWORK`; `hps search`'s new flags
(--virtual-stages, --fp8, --recompute, --memory-headroom, --robust, --clock) alone and with --out,
--json, --framework and --warm-start; `hps sweep` with them; and the Python API (`hps.Problem(...,
clock=)`, a job left open scored directly, `Problem.robust()`) through `python -c`.

Keys beyond `hostile_files`' (each optional): `python` (code run by `python -c` under a wrapper
that turns an `hps.HpsError` into `hps api: error: ...` and exit 2, in place of `argv`), `out`
(an output file the command names: exit 0 must leave a plan file there that is not the `stale`
text written first, any other exit must leave that text, or no file, as it was: else `stale
output` or `lost output`), `stale` (the text of `out` before the command), `none_found` (exit 1
saying no plan was found is an acceptable end: class `none found`).
"""

from __future__ import annotations

import hashlib
import json

from tools.hostile.cases import small_catalog, workload_text
from tools.hostile.files import PLAN, edited

SMALL_PLAN = {
    **PLAN,
    "format": "hps-plan/3",
    "clock": "kernel",
    "job": {**PLAN["job"], "virtual_stages": 1, "fp8": False, "collective": "themis", "chunks": 64},
}
"""A plan `hps search --parallel --workload mlp --catalog small --out` writes (hps-plan/3)."""
LLM_PLAN = {
    "format": "hps-plan/3",
    "workload": "llama3-8b",
    "catalog": "cloud-2026",
    "clock": "kernel",
    "job": {
        "batch": 512,
        "micro_batch": 8,
        "throughput": 10,
        "samples": 10000000,
        "precision": "bf16-adam",
        "zero": 1,
        "recompute": "full",
        "virtual_stages": 2,
        "fp8": True,
        "memory_headroom": 0.05,
        "collective": "themis",
        "chunks": 64,
    },  # fmt: skip
    "stages": [
        {"first": 0, "last": 32, "type": "h100", "tp": 8, "dp": 4},
        {"first": 33, "last": 65, "type": "h100", "tp": 8, "dp": 4},
    ],
}
"""A plan of a zoo decoder LM every exporter takes: two h100 stages, v 2, FP8, full recomputation."""
FRAMEWORKS = ("megatron", "maxtext", "torchtitan", "skypilot")
EVALUATE = ["evaluate", "--plan", "p.json"]
EXECUTE = ["execute", "p.json", "--steps", "1"]
RAW_NAN = "@NaN"
"""`edited` writes a value starting with '@' raw: a NaN literal, as Python's json writes one."""

JOB_EDITS = {  # job field: values a plan file may not hold (and, after "|", values it may)
    "virtual_stages": ((0, 65, -1, 1.5, True, "2", None, 1e308, RAW_NAN), (64,)),
    "fp8": (("yes", 1, None, 0, "true"), ()),
    "recompute": (("partial", 7, None, "auto", "SELECTIVE"), ("selective", "full")),
    "memory_headroom": ((1, 1.0, -0.1, "nan", "0.1", RAW_NAN, "@Infinity", True), (1e-300, 0, 0.999999)),
    "collective": (("ring", 3, None, ""), ("baseline",)),
    "chunks": ((0, 1025, 2.5, -1, True, "64", None), (1024, 1)),
}
TOP_EDITS = {"clock": (("wall", 7, None, "", "KERNEL", ["kernel"]), ("roofline",))}
EXECUTED = {("virtual_stages", 0), ("virtual_stages", None), ("fp8", "yes"), ("memory_headroom", 1),
            ("chunks", 0), ("collective", "ring"), ("clock", "wall"), ("recompute", "partial")}  # fmt: skip
"""The refused edits also given to `hps execute` (each run the executor would compile is slow)."""


def _case(group: str, argv: list[str], files: dict, refuse: bool, said: str | None = None, **more) -> dict:
    case = {"group": group, "argv": argv, "files": files, "timeout": 60.0 if argv[:1] == ["execute"] else 20.0}
    if refuse:
        case["expect"] = "refusal"
    if said:
        case["said"] = said
    return {**case, **more}


def job_field_cases() -> list[dict]:
    """Every /3 key at its extremes and of the wrong type, in evaluate --plan, execute and export."""
    cases = []
    edits = [(f"job.{key}", key, bad, good) for key, (bad, good) in JOB_EDITS.items()]
    edits += [(key, key, bad, good) for key, (bad, good) in TOP_EDITS.items()]
    for path, key, bad, good in edits:
        for value in bad:
            said = key.replace("_", ".?") if key != "clock" else "clock"
            said = "NaN|Infinity|JSON" if isinstance(value, str) and value[:1] == "@" else said
            files = {"p.json": edited(SMALL_PLAN, path, value)}
            cases.append(_case("plan3 job field", EVALUATE, files, True, said))
            if not isinstance(value, list) and (key, value) in EXECUTED:
                cases.append(_case("plan3 job field", EXECUTE, files, True, said))
            files = {"p.json": edited(LLM_PLAN, path, value)}
            framework = FRAMEWORKS[len(cases) % len(FRAMEWORKS)]
            cases.append(_case("plan3 export", ["export", "p.json", "--to", framework], files, True, said))
        for value in good:
            files = {"p.json": edited(SMALL_PLAN, path, value)}
            cases.append(_case("plan3 job field", EVALUATE, files, False))
            cases.append(_case("plan3 job field", [*EVALUATE, "--json"], files, False))
    for value in (1, 2, 4, 64):
        files = {"p.json": edited(SMALL_PLAN, "job.virtual_stages", value)}
        refuse = value > 1
        said = "virtual.?stages" if refuse else None
        cases.append(_case("plan3 virtual stages", EXECUTE, files, refuse, said))
    for framework in FRAMEWORKS:
        for value in (1, 4, 64):
            files = {"p.json": edited(LLM_PLAN, "job.virtual_stages", value)}
            cases.append(_case("plan3 virtual stages", ["export", "p.json", "--to", framework], files, value == 64))
        cases.append(_case("plan3 export", ["export", "p.json", "--to", framework, "--json"],
                           {"p.json": json.dumps(LLM_PLAN)}, False))  # fmt: skip
    return cases


def _plan_with_clock_dropped(plan: dict) -> dict:
    document = json.loads(json.dumps(plan))
    document.pop("clock")
    return document


def unit_cases() -> list[dict]:
    """A stage with fewer pipeline units (layers) than virtual stages; FP8 on types without an FP8 peak."""
    cases = []
    split = json.loads(json.dumps(SMALL_PLAN))
    split["stages"] = [
        {"first": 0, "last": 0, "type": "cpu", "tp": 1, "dp": 1},
        {"first": 1, "last": 3, "type": "gpu-a", "tp": 1, "dp": 1},
    ]
    for v in (2, 4, 3):  # evaluate scores such a plan infeasible (reason virtual_stages)
        files = {"p.json": edited(split, "job.virtual_stages", v)}
        cases.append(_case("plan3 units and fp8", EVALUATE, files, False, check=["infeasible"]))
        cases.append(_case("plan3 units and fp8", [*EVALUATE, "--json"], files, False, check=["infeasible"]))
    llm = json.loads(json.dumps(LLM_PLAN))
    llm["stages"] = [
        {"first": 0, "last": 0, "type": "h100", "tp": 8, "dp": 4},
        {"first": 1, "last": 65, "type": "h100", "tp": 8, "dp": 4},
    ]
    for framework in FRAMEWORKS:
        files = {"p.json": edited(llm, "job.virtual_stages", 2)}
        cases.append(_case("plan3 units and fp8", ["export", "p.json", "--to", framework], files, True))
    for stage_type in ("cpu", "gpu-a", "gpu-b"):
        plan = edited(edited_json(SMALL_PLAN, "stages.0.type", stage_type), "job.fp8", True)
        cases.append(_case("plan3 units and fp8", EVALUATE, {"p.json": plan}, False, check=["infeasible"]))
    cases.append(_case("plan3 units and fp8", EXECUTE, {"p.json": edited(SMALL_PLAN, "job.fp8", True)}, True, "fp8"))
    for stage_type in ("a100-80", "l4", "tpu-v5p"):
        plan = edited_json(LLM_PLAN, "stages.0.type", stage_type)
        plan["stages"][1]["type"] = stage_type
        for framework in ("megatron", "torchtitan"):
            argv = ["export", "p.json", "--to", framework]
            said = "fp8|type" if stage_type.startswith("tpu") else "fp8"
            cases.append(_case("plan3 units and fp8", argv, {"p.json": json.dumps(plan)}, True, said))
        evaluate = ["evaluate", "--plan", "p.json"]
        cases.append(_case("plan3 units and fp8", evaluate, {"p.json": json.dumps(plan)}, False, check=["infeasible"]))
    return cases


def edited_json(plan: dict, path: str, value) -> dict:
    return json.loads(edited(plan, path, value))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def digest_cases() -> list[dict]:
    """workload_sha256 and catalog_sha256: malformed, on a zoo name, a file changed or deleted."""
    cases = []
    workload, catalog = workload_text(), small_catalog()
    good = json.loads(json.dumps(SMALL_PLAN))
    good.update(workload="w.toml", catalog="c.toml", workload_sha256=_sha(workload), catalog_sha256=_sha(catalog))
    good["stages"][0]["last"] = 1
    files = {"w.toml": workload, "c.toml": catalog}
    for argv in (EVALUATE, ["execute", "p.json", "--steps", "1"]):
        cases.append(_case("plan3 digest", argv, {**files, "p.json": json.dumps(good)}, False))
    for key, name in (("workload_sha256", "w.toml"), ("catalog_sha256", "c.toml")):
        for value in (_sha("x")[:63], _sha("x").upper(), _sha("x") + "0", 7, None, "", "z" * 64):
            plan = {**good, key: value}
            cases.append(_case("plan3 digest", EVALUATE, {**files, "p.json": json.dumps(plan)}, True, key))
        changed = {**files, name: files[name] + "\n# edited since\n", "p.json": json.dumps(good)}
        gone = {k: v for k, v in files.items() if k != name} | {"p.json": json.dumps(good)}
        for argv in (EVALUATE, EXECUTE):
            cases.append(_case("plan3 digest", argv, changed, True, key))
            cases.append(_case("plan3 digest", argv, gone, True, key))
        zoo = {**SMALL_PLAN, key: _sha("x")}
        cases.append(_case("plan3 digest", EVALUATE, {"p.json": json.dumps(zoo)}, True, key))
        llm = {**LLM_PLAN, key: _sha("x")}
        cases.append(_case("plan3 digest", ["export", "p.json", "--to", "megatron"], {"p.json": json.dumps(llm)},
                           True, key))  # fmt: skip
        other = "catalog_sha256" if key == "workload_sha256" else "workload_sha256"
        second = {k: v for k, v in good.items() if k not in (other, "clock")} | {"format": "hps-plan/2"}
        for field in JOB_EDITS:
            second["job"] = {k: v for k, v in second["job"].items() if k != field or k in ("recompute",)}
        cases.append(_case("plan3 digest", EVALUATE, {**files, "p.json": json.dumps(second)}, True, key))
    return cases


def format_cases() -> list[dict]:
    """hps-plan/2 files with /3-only keys, /3 files with unknown keys, the clock dropped."""
    cases = []
    second = json.loads(json.dumps(SMALL_PLAN))
    second["format"] = "hps-plan/2"
    plain = json.loads(json.dumps(second))
    plain.pop("clock")
    for key in ("virtual_stages", "fp8", "memory_headroom", "collective", "chunks"):
        plain["job"].pop(key, None)
    cases.append(_case("plan3 format", EVALUATE, {"p.json": json.dumps(plain)}, False))
    for path, value in (("clock", "kernel"), ("job.virtual_stages", 1), ("job.fp8", False),
                        ("job.memory_headroom", 0.1), ("job.collective", "themis"), ("job.chunks", 64),
                        ("job.recompute", "selective"), ("workload_sha256", _sha("x"))):  # fmt: skip
        files = {"p.json": edited(plain, path, value)}
        said = path.split(".")[-1].replace("_", ".?")
        cases.append(_case("plan3 format", EVALUATE, files, True, said))
        llm = {**LLM_PLAN, "format": "hps-plan/2"}
        argv = ["export", "p.json", "--to", "megatron"]
        cases.append(_case("plan3 format", argv, {"p.json": json.dumps(llm)}, True)) if path == "clock" else None
    for path, value in (("extra", 1), ("job.interleave", 2), ("stages.0.v", 2), ("job.virtualStages", 2),
                        ("Clock", "kernel"), ("job.fp16", True)):  # fmt: skip
        files = {"p.json": edited(SMALL_PLAN, path, value)}
        said = path.split(".")[-1]
        cases.append(_case("plan3 format", EVALUATE, files, True, said))
        files = {"p.json": edited(LLM_PLAN, path, value)}
        cases.append(_case("plan3 format", ["export", "p.json", "--to", "maxtext"], files, True, said))
    files = {"p.json": json.dumps(_plan_with_clock_dropped(SMALL_PLAN))}
    for argv in (EVALUATE, [*EVALUATE, "--clock", "roofline"], [*EVALUATE, "--clock", "wall"]):
        cases.append(_case("plan3 format", argv, files, argv[-1] == "wall", "clock" if argv[-1] == "wall" else None))
    for clock in ("kernel", "roofline", "wall"):
        argv = [*EVALUATE, "--clock", clock]
        cases.append(_case("plan3 format", argv, {"p.json": json.dumps(SMALL_PLAN)}, clock == "wall"))
    cases.append(_case("plan3 format", [*EXECUTE, "--clock", "roofline"], {"p.json": json.dumps(SMALL_PLAN)}, False))
    return cases


SEARCH = ["search", "--parallel", "--workload", "transformer-small", "--catalog", "small", "--seconds", "2"]
SCHEDULE = ["search", "--workload", "ctr-dnn-small", "--catalog", "small", "--method", "exact", "--seconds", "2"]
FLAGS = {  # flag: (values to refuse, values to take)
    "--virtual-stages": (("0", "-1", "abc", "1e9", "65", "1.5", "", "AUTO"), ("auto", "1", "4", "64")),
    "--fp8": (("maybe", "", "true"), ("on", "off", "auto")),
    "--recompute": (("bogus", "partial", ""), ("auto", "selective", "full", "none")),
    "--memory-headroom": (("1", "-0.5", "nan", "inf", "1e308", "abc"), ("0.999999", "0", "1e-300")),
    "--clock": (("wall", "", "Kernel"), ("kernel", "roofline")),
}
STALE = '{"stale": "written before the command; a plan found must replace it"}\n'


def search_flag_cases() -> list[dict]:
    """hps search's new flags: alone, with --json, with --out (stale output), --framework, --warm-start."""
    cases = []
    for flag, (bad, good) in FLAGS.items():
        said = flag.lstrip("-").replace("-", ".?")
        for i, value in enumerate(bad):
            argv = [*SEARCH, flag, value] + (["--json"] if i % 2 else [])
            cases.append(_case("plan3 search flag", argv, {}, True, said))
            cases.append(_case("plan3 search flag", [*argv, "--out", "p.json"], {"p.json": STALE}, True, said,
                               out="p.json", stale=STALE))  # fmt: skip
        for i, value in enumerate(good):
            argv = [*SEARCH, flag, value] + (["--json"] if i % 2 else [])
            case = _case("plan3 search flag", [*argv, "--out", "p.json"], {"p.json": STALE}, False, out="p.json",
                         stale=STALE, none_found=True)  # fmt: skip
            cases.append(case)
    for clock in ("kernel", "roofline", "wall"):
        for argv in (SEARCH, [*SEARCH, "--json"], SCHEDULE):
            refuse = clock == "wall"
            more = {"check": ["model-note"]} if argv is SCHEDULE else {}
            cases.append(_case("plan3 robust", [*argv, "--robust", "--clock", clock], {}, refuse,
                               "clock" if refuse else None, **more))  # fmt: skip
    cases.append(_case("plan3 robust", [*SEARCH, "--robust", "--fp8", "auto", "--virtual-stages", "auto"], {}, False))
    cases.append(_case("plan3 robust", [*SCHEDULE, "--robust"], {}, False, check=["model-note"]))
    impossible = [*SEARCH, "--throughput", "1e15"]
    for extra in ([], ["--robust"], ["--virtual-stages", "auto", "--fp8", "auto"], ["--memory-headroom", "0.999999"]):
        for out in (True, False):
            argv = [*impossible, *extra, "--out", "p.json"] if out else [*impossible, *extra, "--json"]
            more = {"out": "p.json", "stale": STALE} if out else {}
            cases.append(_case("plan3 none found", argv, {"p.json": STALE} if out else {}, False, none_found=True,
                               **more))  # fmt: skip
    cases.append(_case("plan3 none found", [*impossible, "--out", "p.json"], {}, False, none_found=True,
                       out="p.json"))  # fmt: skip
    llm = ["search", "--parallel", "--workload", "llama3-8b", "--catalog", "cloud-2026", "--seconds", "2"]
    for framework in ("megatron", "maxtext", "torchtitan"):
        cases.append(_case("plan3 framework", [*llm, "--framework", framework, "--virtual-stages", "auto",
                                               "--fp8", "auto", "--json"], {}, False, timeout=60.0))  # fmt: skip
        cases.append(_case("plan3 framework", [*SEARCH, "--framework", framework, "--recompute", "selective"], {},
                           False))  # fmt: skip
    cases.append(_case("plan3 framework", [*llm, "--framework", "maxtext", "--recompute", "selective"], {}, False,
                       timeout=60.0))  # fmt: skip
    for flags in (["--virtual-stages", "auto"], ["--fp8", "auto"], ["--recompute", "auto"], []):
        argv = [*SEARCH, "--warm-start", *flags, "--out", "p.json"]
        cases.append(_case("plan3 warm start", argv, {"p.json": STALE}, bool(flags), "warm.?start|open|auto",
                           out="p.json", stale=STALE, none_found=True))  # fmt: skip
    cases.append(_case("plan3 warm start", [*SEARCH, "--warm-start", "--method", "greedy"], {}, True, "warm"))
    sweep = ["sweep", "--workload", "transformer-small", "--catalog", "small", "--floors", "500,1000",
             "--point-seconds", "1"]  # fmt: skip
    for flags in (["--virtual-stages", "auto"], ["--fp8", "auto"], ["--recompute", "auto"], ["--clock", "wall"],
                  ["--clock", "roofline"], ["--clock", "kernel", "--json"], ["--robust"]):  # fmt: skip
        refuse = flags[-1] not in ("roofline", "--json")
        cases.append(_case("plan3 sweep", [*sweep, *flags], {}, refuse, timeout=30.0))
    return cases


API = """
import dataclasses, math, hps
w = hps.load_workload("transformer-small")
job = hps.default_job(w)
stage = hps.ParallelStage(0, 6, "gpu-b", 1, 1)


def problem(clock=None, **changes):
    return hps.Problem("transformer-small", "small", dataclasses.replace(job, **changes), parallel=True, clock=clock)
"""
API_CASES = (  # (code after API, whether it must raise HpsError)
    ('hps.Problem("transformer-small", "small", clock="wall")', True),
    ('hps.Problem("transformer-small", "small", clock=7)', True),
    ('hps.Problem("transformer-small", "small", clock="")', True),
    ('hps.Problem("ctr-dnn-small", "small", clock="kernel")', True),
    ('print(hps.Problem("transformer-small", "small", clock="roofline", parallel=True))', False),
    ("print(hps.evaluate(problem(micro_batch=1, virtual_stages=None), [stage]))", True),
    ("print(problem(micro_batch=1, fp8=None).score(hps.Plan(stages=(stage,), micro_batch=1)))", True),
    ("print(problem(micro_batch=1, recompute=None).parallel_problem)", True),
    ("r = problem(micro_batch=1, virtual_stages=None).robust()\nprint(r.job.throughput, r.job.virtual_stages)", False),
    ('print(problem("roofline", micro_batch=1, fp8=None).robust().job.throughput)', False),
    ('print(hps.Problem("ctr-dnn-small", "small").robust().job.throughput)', False),
    ("print(problem().robust().robust().job.throughput)", False),
    ("problem(virtual_stages=0)", True),
    ("problem(virtual_stages=True)", True),
    ('problem(memory_headroom=float("nan"))', True),
    ("problem(memory_headroom=1.0)", True),
    ('problem(fp8="yes")', True),
    ('problem(recompute="partial")', True),
    ('problem(clock="wall")', True),
    ('r = hps.plan(problem(micro_batch=1, virtual_stages=None), "exact", seconds=2)\nprint(r.plan, r.cost)', False),
    ('p = problem(micro_batch=1, virtual_stages=None)\nprint(p.plan_file(hps.plan(p, "exact", seconds=2)))', False),
    ('p = problem("roofline", micro_batch=1)\nprint(p.plan_file(hps.plan(p, "exact", seconds=2)).clock)', False),
    ("s = hps.evaluate(problem(micro_batch=1, fp8=True), [stage])\nprint(s.feasible, s.reason)", False),
    ("s = hps.evaluate(problem(micro_batch=1, virtual_stages=8), [stage])\nprint(s.feasible, s.reason)", False),
    ("print(problem(micro_batch=1).with_job(virtual_stages=None).robust().job)", False),
    ('print(hps.evaluate(problem("roofline", micro_batch=1), [stage]))', False),
)
RUNNER = f"""
import sys
from hps.errors import HpsError
try:
    exec(compile({API!r} + sys.argv[1], "<case>", "exec"), {{}})
except HpsError as error:
    print(f"hps api: error: {{error}}", file=sys.stderr)
    sys.exit(2)
"""
"""The wrapper `python -c` runs a case's code under (after API): an HpsError is a refusal, any
other exception a traceback."""


def api_cases() -> list[dict]:
    return [
        {
            **({"check": ["infeasible"]} if "s.feasible" in code else {}),
            "group": "plan3 api",
            "argv": [],
            "files": {},
            "python": code,
            "timeout": 60.0,
            **({"expect": "refusal"} if refuse else {}),
        }  # fmt: skip
        for code, refuse in API_CASES
    ]


def cases() -> list[dict]:
    """Every case of this module, in report order."""
    builders = (job_field_cases, unit_cases, digest_cases, format_cases, search_flag_cases, api_cases)
    return [case for build in builders for case in build()]
