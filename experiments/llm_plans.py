"""LLM plans: GPT-3 175B, Llama-3 70B and 405B and the Transformer-1T on cloud-2026 at half,
one and two times their default floors, planned by the exact solver (60 s per plan at most,
with its certificate); the cost–floor Pareto front and each plan's stages per workload.

    hps run experiments/llm_plans.py
"""

from hps.experiments.llm_plans import LlmPlansConfig


def config() -> LlmPlansConfig:
    return LlmPlansConfig(name="llm_plans", catalog="cloud-2026", floor_scales=(0.5, 1.0, 2.0), seconds=60.0)
