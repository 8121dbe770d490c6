"""The sweep's cases about the parallel-plan policy: `hps train --kind parallel` and experiment
files of a ParallelTrainConfig at their extremes, `hps plan --checkpoint` with a parallel policy
on workloads and catalogues of every size (zoo LLMs, small models, a workload past the largest
bucket), its flags at their extremes beside it, `--out` written only with a plan, and a
parallel checkpoint given where a placement or collective policy is needed (and the other way
round). A trained parallel run folder is the fixture "parallel" (copied to `ck/`).
"""

from __future__ import annotations

from tools.hostile.flags import LEARNED_COLLECTIVE
from tools.hostile.plans import _case

PLAN = ["plan", "--checkpoint", "ck"]
CONFIG = "from hps.placement.agent.parallel_train import ParallelTrainConfig\nCONFIG = ParallelTrainConfig({})\n"
TINY = "pool_size=2, num_envs=16, samples_per_instance=8, updates_per_chunk=1, num_chunks=1, eval_instances=1"


def _with(case: dict, fixture: str = "parallel", timeout: float = 120.0) -> dict:
    return {**case, "fixture": fixture, "timeout": timeout}


def config_cases() -> list[dict]:
    """ParallelTrainConfig fields no run can use, each named in the refusal."""
    cases = []
    for field, value, said in (
        ("pool_size", "0", "pool_size"),
        ("pool_size", "2.5", "pool_size"),
        ("max_stages", "0", "max_stages"),
        ("max_stages", "True", "max_stages"),
        ("eval_instances", "-1", "eval_instances"),
        ("demo_batch", "0", "demo_batch"),
        ("demonstrations", "5", "demonstrations"),
        ("teacher_seconds", "0.0", "teacher_seconds"),
        ("teacher_seconds", "float('nan')", "teacher_seconds"),
        ("split", "'nope'", "split"),
        ("algorithm", "'ppo'", "algorithm"),
        ("num_envs", "12", "num_envs"),
        ("learning_rate", "float('inf')", "learning_rate"),
        ("top_fraction", "1.5", "top_fraction"),
    ):
        text = CONFIG.format(
            ", ".join(p for p in TINY.split(", ") if not p.startswith(f"{field}=")) + f", {field}={value}"
        )
        cases.append(_case("policy config", ["train", "t.py", "--out", "r"], {"t.py": text}, True, said, timeout=60.0))
    return cases


def flag_cases() -> list[dict]:
    """`hps train --kind parallel` and `hps plan` flags at their extremes."""
    cases = []
    for flags, said in (
        (["--envs", "0"], "envs"),
        (["--envs", "7"], "num.?envs|samples"),
        (["--chunks", "0"], "chunks"),
        (["--minutes", "-1"], "minutes"),
        (["--algorithm", "ppo"], "algorithm"),
    ):
        cases.append(_case("policy train flags", ["train", "--kind", "parallel", "--out", "r", *flags], {}, True, said))
    for flags, said in (
        (["--plans", "0"], "plans"),
        (["--plans", "-3"], "plans"),
        (["--plans", "1e9"], "plans"),
        (["--seed", "-1"], "seed"),
        (["--workload", "nope", "--catalog", "small"], "nope|workload"),
        (["--workload", "transformer-small", "--catalog", "nope"], "nope|catalog"),
    ):
        cases.append(_with(_case("policy plan flags", [*PLAN, *flags], {}, True, said)))
    return cases


def plan_cases() -> list[dict]:
    """A parallel policy planning zoo workloads on shipped catalogues: a plan or a clear verdict,
    `--out` written only with a feasible plan (exit 1 and nothing written otherwise)."""
    cases = []
    for workload, catalog in (
        ("transformer-small", "small"),
        ("gpt3-175b", "cloud-2026"),
        ("llama3-70b", "cloud-2026"),
        ("transformer-1t", "cloud-2026"),
        ("resnet50", "small"),
    ):
        argv = [*PLAN, "--workload", workload, "--catalog", catalog, "--plans", "4"]
        cases.append(_with(_case("policy plan", argv, {}, False, none_found=True)))
        cases.append(_with(_case("policy plan", [*argv, "--json"], {}, False, none_found=True)))
        cases.append(
            _with(_case("policy plan out", [*argv, "--out", "p.json"], {}, False, none_found=True, out="p.json"))
        )
    return cases


def kind_cases() -> list[dict]:
    """A parallel checkpoint where another kind is needed, and the other way round."""
    return [
        _with(
            _case(
                "policy checkpoint kind",
                LEARNED_COLLECTIVE,
                {},
                True,
                "parallel|kind",
            )
        ),  # fmt: skip
        _with(
            _case(
                "policy checkpoint kind",
                [*PLAN, "--workload", "transformer-small", "--catalog", "small", "--parallel"],
                {},
                True,
                "parallel",
            )
        ),  # fmt: skip
        _with(
            _case(
                "policy checkpoint kind",
                [*PLAN, "--workload", "transformer-small", "--catalog", "small"],
                {},
                True,
                "collective",
            ),
            fixture="collective",
        ),  # fmt: skip
    ]


def cases() -> list[dict]:
    return config_cases() + flag_cases() + plan_cases() + kind_cases()
