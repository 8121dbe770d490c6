"""The sweep's cases about the most throughput within a budget: `hps search --maximize throughput
--budget` at its extremes (each flag alone, both with the wrong kind of value, with --out over a
stale file, --json, --method other than exact, the schedule model, --warm-start, --robust,
--framework, a floor no budget buys); `--evaluations` where `--budget` used to count them; plan
files whose job.budget_per_hour is malformed or under the plan's own $/hour, fed to `hps
evaluate --plan`, `hps execute` and `hps export`; `hps sweep --maximize throughput --budgets` at its
extremes; and `Problem.with_job(budget_per_hour=...)` through `python -c`.
"""

from __future__ import annotations

from tools.hostile.files import edited
from tools.hostile.plans import EVALUATE, EXECUTE, LLM_PLAN, RAW_NAN, SCHEDULE, SEARCH, SMALL_PLAN, STALE, _case

DUAL = [*SEARCH, "--maximize", "throughput"]
BAD_BUDGETS = ("0", "-5", "nan", "inf", "-inf", "1e300", "1e-9", "abc", "", "5$", "0x10")
GOOD_BUDGETS = ("1e-6", "0.5", "5", "1e6", "1e12")
SWEEP = ["sweep", "--workload", "transformer-small", "--catalog", "small", "--point-seconds", "1"]


def search_cases() -> list[dict]:
    """The two flags alone, together at their extremes, and beside every other search flag."""
    cases = []
    for i, value in enumerate(BAD_BUDGETS):
        argv = [*DUAL, "--budget", value] + (["--json"] if i % 2 else [])
        cases.append(_case("budget search", argv, {}, True, "budget"))
        cases.append(_case("budget search", [*argv, "--out", "p.json"], {"p.json": STALE}, True, "budget",
                           out="p.json", stale=STALE))  # fmt: skip
    for i, value in enumerate(GOOD_BUDGETS):
        argv = [*DUAL, "--budget", value] + (["--json"] if i % 2 else [])
        cases.append(_case("budget search", [*argv, "--out", "p.json"], {"p.json": STALE}, False, out="p.json",
                           stale=STALE, none_found=True))  # fmt: skip
        cases.append(_case("budget search", argv, {}, False))
    for argv, said in (
        ([*DUAL], "--budget"),
        ([*SEARCH, "--budget", "5"], "--evaluations"),
        ([*SEARCH, "--maximize", "cost", "--budget", "5"], "--evaluations"),
        ([*SEARCH, "--maximize", "speed", "--budget", "5"], "maximize"),
        ([*SEARCH, "--maximize", "", "--budget", "5"], "maximize"),
        ([*DUAL, "--budget", "5", "--method", "greedy"], "exact"),
        ([*DUAL, "--budget", "5", "--method", "uniform"], "exact"),
        ([*DUAL, "--budget", "5", "--framework", "megatron"], "exact|framework"),
    ):
        cases.append(_case("budget search", argv, {}, True, said))
    for extra in (["--warm-start"], ["--robust"], ["--evaluations", "30"], ["--clock", "roofline"],
                  ["--virtual-stages", "auto", "--fp8", "auto"], ["--throughput", "1e15"], ["--throughput", "1e-6"],
                  ["--micro-batch", "4"], ["--seconds", "1e-9"], ["--method", "all"]):  # fmt: skip
        argv = [*DUAL, "--budget", "5", *extra]
        cases.append(_case("budget search", [*argv, "--out", "p.json"], {"p.json": STALE}, False, out="p.json",
                           stale=STALE, none_found=True))  # fmt: skip
        cases.append(_case("budget search", [*argv, "--json"], {}, False))
    cases.append(_case("budget search", [*SCHEDULE, "--maximize", "throughput", "--budget", "5"], {}, False,
                       check=["model-note"]))  # fmt: skip
    for value in ("0.01", "1e-5"):  # nothing rents that cheaply: proven infeasible, nothing written
        argv = [*DUAL, "--budget", value, "--out", "p.json"]
        cases.append(_case("budget search", argv, {"p.json": STALE}, False, out="p.json", stale=STALE,
                           none_found=True))  # fmt: skip
    return cases


def plan_file_cases() -> list[dict]:
    """job.budget_per_hour malformed (refused, naming it) or under the plan's own $/hour (scored
    infeasible, reason budget) in evaluate, execute and export."""
    cases = []
    bad = (0, -1, "5", True, None, RAW_NAN, "@Infinity", 1e300, [5], {"x": 1})
    for value in bad:
        said = "NaN|Infinity|JSON" if isinstance(value, str) and value[:1] == "@" else "budget.?per.?hour"
        cases.append(_case("budget plan file", EVALUATE, {"p.json": edited(SMALL_PLAN, "job.budget_per_hour", value)},
                           True, said))  # fmt: skip
        files = {"p.json": edited(LLM_PLAN, "job.budget_per_hour", value)}
        cases.append(_case("budget plan file", ["export", "p.json", "--to", "megatron"], files, True, said))
    for value in (1e-6, 0.01):  # under what the plan's units rent for: infeasible, reason budget
        files = {"p.json": edited(SMALL_PLAN, "job.budget_per_hour", value)}
        cases.append(_case("budget plan file", EVALUATE, files, False, check=["infeasible"]))
        cases.append(_case("budget plan file", [*EVALUATE, "--json"], files, False, check=["infeasible"]))
    for value in (1e6, 1e12):
        files = {"p.json": edited(SMALL_PLAN, "job.budget_per_hour", value)}
        cases.append(_case("budget plan file", EVALUATE, files, False))
        cases.append(_case("budget plan file", EXECUTE, files, False))
        files = {"p.json": edited(LLM_PLAN, "job.budget_per_hour", value)}
        cases.append(_case("budget plan file", ["export", "p.json", "--to", "torchtitan"], files, False))
    two = edited({**SMALL_PLAN, "format": "hps-plan/2"}, "job.budget_per_hour", 5)
    cases.append(_case("budget plan file", EVALUATE, {"p.json": two}, True, "budget.?per.?hour|unknown"))
    return cases


def sweep_cases() -> list[dict]:
    """hps sweep --maximize throughput --budgets at its extremes and beside the cost sweep's flags."""
    cases = []
    dual = [*SWEEP, "--maximize", "throughput"]
    for value in ("0", "-1", "nan", "1e300", "abc", "", ",,", "1e-9"):
        cases.append(_case("budget sweep", [*dual, "--budgets", value], {}, True, "budgets"))
    for argv, said in (
        ([*dual], "budgets|maximize"),
        ([*SWEEP, "--budgets", "5"], "maximize"),
        ([*dual, "--budgets", "5", "--floors", "500"], "floors"),
        ([*dual, "--budgets", "5", "--certify", "2"], "certify"),
        ([*dual, "--budgets", "5", "--checkpoint", "none"], "checkpoint"),
        ([*dual, "--budgets", "5", "--price-scale", "1e300"], "price.?scale"),
        ([*dual, "--budgets", ",".join(str(i + 1) for i in range(20_000))], "budgets|points"),
    ):
        cases.append(_case("budget sweep", argv, {}, True, said))
    for extra in ([], ["--json"], ["--price-scale", "0.5,2"], ["--throughput", "1e15", "--json"],
                  ["--clock", "roofline"], ["--plot", "b.png"]):  # fmt: skip
        cases.append(_case("budget sweep", [*dual, "--budgets", "0.01,5,50", *extra], {}, False, timeout=60.0))
    return cases


API = """
import hps
p = hps.Problem("transformer-small", "small", parallel=True)
"""
API_CASES = (  # (code after API, refused, said)
    ("hps.plan(p.with_job(budget_per_hour=5.0))", False, None),
    ("hps.plan(p.with_job(budget_per_hour=1e-6))", False, None),
    ("hps.plan(p.with_job(budget_per_hour=5.0), method='greedy')", True, "exact"),
    ("p.with_job(budget_per_hour=-1.0)", True, "budget_per_hour"),
    ("p.with_job(budget_per_hour=float('nan'))", True, "budget_per_hour"),
    ("p.with_job(budget_per_hour='5')", True, "budget_per_hour"),
    ("p.with_job(budget_per_hour=10**400)", True, "budget_per_hour"),
    ("hps.Problem('ctr-dnn', 'cloud-2024').with_job(budget_per_hour=5.0)", True, "budget_per_hour"),
    ("import numpy as np; hps.plan(p.with_job(budget_per_hour=np.float32(5)))", False, None),
    ("r = hps.plan(p.with_job(budget_per_hour=5.0)); hps.write_plan(p.plan_file(r), 'q.json'); "
     "print(hps.read_plan('q.json').job.budget_per_hour)", False, None),
)  # fmt: skip


def api_cases() -> list[dict]:
    return [
        {"group": "budget api", "argv": [], "files": {}, "python": API + code, "timeout": 60.0,
         **({"expect": "refusal", "said": said} if refused else {})}
        for code, refused, said in API_CASES
    ]  # fmt: skip


def cases() -> list[dict]:
    return [*search_cases(), *plan_file_cases(), *sweep_cases(), *api_cases()]
