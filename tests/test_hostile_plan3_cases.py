"""The plan3 and budget hostile sweeps' case lists (hps-plan/3 files, the clocks, the new search
flags, the most throughput within a budget, the Python API) and the runner's checks they add: at
least 150 plan3 and 100 budget cases, none repeated in any sweep, each in a group; an output file
left stale or lost is a failure, exit 1 with no plan found is not where the case allows it; a
`python -c` case ends refused on an HpsError and as a traceback otherwise."""

from __future__ import annotations

import json

from tools.hostile.cases import all_cases
from tools.hostile.plans import cases as plan3_cases
from tools.hostile.setup import SPECIAL_KINDS
from tools.hostile.sweep import HostileSweepConfig, classify, items, new_cases, run_item

PLAN3 = plan3_cases()
KEYS = {"group", "argv", "files", "timeout", "expect", "said", "check", "python", "out", "stale", "none_found"}


def identity(case: dict) -> str:
    files = {name: text if isinstance(text, str) else text.hex() for name, text in case["files"].items()}
    setup = [case.get(key) for key in ("special", "steps", "pipe", "fixture", "python")]
    return json.dumps([case["argv"], files, setup], sort_keys=True)


def test_the_plan3_sweep_holds_at_least_150_cases_none_repeated_in_any_sweep():
    assert len(PLAN3) >= 150
    seen = [identity(case) for case in [*all_cases(), *new_cases(), *PLAN3]]
    assert len(seen) == len(set(seen))
    assert len(items(HostileSweepConfig(name="x", cases="plan3"))) == len(PLAN3)
    assert all(key.startswith("plan3") for key, _ in items(HostileSweepConfig(name="x", cases="plan3")))


def test_every_plan3_case_names_a_group_and_only_keys_the_runner_reads():
    for case in PLAN3:
        assert case["group"].startswith("plan3 ")
        assert set(case) <= KEYS, set(case) - KEYS
        assert set(case.get("special", {}).values()) <= set(SPECIAL_KINDS)
        assert case.get("expect") in (None, "refusal")
        assert set(case.get("check", ())) <= {"infeasible", "model-note"}
        assert bool(case["argv"]) != bool(case.get("python"))
        assert case.get("stale") is None or case.get("out")


def test_an_output_left_stale_or_lost_is_a_failure_and_no_plan_found_is_not(tmp_path):
    stale = '{"stale": 1}'
    case = {"group": "g", "argv": ["search"], "out": "p.json", "stale": stale, "none_found": True}
    (tmp_path / "p.json").write_text(stale)
    done = {"rc": 0, "out": "feasible\n", "err": "", "hung": False}
    assert classify(done, case, tmp_path) == "stale output"
    (tmp_path / "p.json").write_text('{"format": "hps-plan/3"}')
    assert classify(done, case, tmp_path) == "ok"
    none = {**done, "rc": 1, "err": "hps search: no plan found; p.json was not written\n"}
    assert classify(none, case, tmp_path) == "lost output"
    (tmp_path / "p.json").write_text(stale)
    assert classify(none, case, tmp_path) == "none found"
    assert classify(none, {**case, "none_found": False}, tmp_path) == "exit 1"
    (tmp_path / "p.json").unlink()
    assert classify({**none, "rc": 2}, case, tmp_path) == "lost output"


def test_a_python_case_is_refused_on_an_hps_error_and_a_traceback_otherwise():
    config = HostileSweepConfig(name="x", cases="plan3", timeout_s=60.0)
    base = {"group": "plan3 api", "argv": [], "files": {}, "timeout": 60.0}
    refused = run_item(config, {**base, "python": 'hps.Problem("mlp", "small", clock="wall")', "expect": "refusal"})
    assert refused["class"] == "refused" and "clock" in refused["message"]
    assert run_item(config, {**base, "python": "print(1 / 0)"})["class"] == "traceback"
    assert run_item(config, {**base, "python": "print(job.batch)"})["class"] == "ok"


def test_the_budget_and_process_sweeps_hold_their_own_cases_none_repeated_in_any_sweep():
    from tools.hostile.budgets import cases as budget_cases
    from tools.hostile.processes import cases as process_cases

    budgets, processes = budget_cases(), process_cases()
    assert len(budgets) >= 100 and len(processes) >= 40
    seen = [identity(case) for case in [*all_cases(), *new_cases(), *PLAN3, *budgets, *processes]]
    assert len(seen) == len(set(seen))
    for name, prefix, group, listed in (("budgets", "budget", "budget ", budgets),
                                        ("processes", "process", "processes ", processes)):  # fmt: skip
        keyed = items(HostileSweepConfig(name="x", cases=name))
        assert len(keyed) == len(listed) and all(key.startswith(prefix) for key, _ in keyed)
        for case in listed:
            assert case["group"].startswith(group) and set(case) <= KEYS, set(case) - KEYS
            assert bool(case["argv"]) != bool(case.get("python"))
            assert case.get("stale") is None or case.get("out")
