"""The exact placement solver (docs/pipeline-plans.md): the cheapest plan of the general model
over every plan, with a certificate (a proven lower bound and the gap). numpy only: importing it
imports no JAX."""

from hps.methods.exact_schedule.solver import solve_exact

__all__ = ["solve_exact"]
