"""The Python API: what the command line does, as functions and typed results (docs/api.md).

loading      load_workload, load_catalog, load_network, default_job, read_plan, write_plan,
             derive_workload
planning     Problem (with report and plan_file), plan, planners, evaluate (results: hps.contract.types)
collectives  allreduce, allreduce_batch, AllReduce
learning     train, load_policy, Policy, Training
running      execute, Execution

`import hps` exposes every name at the top level and imports each module on first use, so that
importing hps does not import JAX.
"""
