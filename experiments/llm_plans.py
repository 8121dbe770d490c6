"""LLM plans: GPT-3 175B, Llama-3 70B and 405B and the Transformer-1T on cloud-2026 at half,
one and two times their default floors, in the parallel-plan model (pipeline stages of tensor- and
data-parallel groups, integer micro-batches, memory per device): the exact solver (60 s per plan,
with its proven bound and gap) and the best single-type plan (5 s per type); the cost–floor Pareto
front and each plan's stages per workload.

    hps run experiments/llm_plans.py
"""

from hps.studies.llm_plans import LlmPlansConfig


def config() -> LlmPlansConfig:
    return LlmPlansConfig(
        name="llm_plans", catalog="cloud-2026", floor_scales=(0.5, 1.0, 2.0), seconds=60.0, single_seconds=5.0
    )
