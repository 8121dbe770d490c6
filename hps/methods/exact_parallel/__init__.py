"""The exact solver of the parallel-plan model: the cheapest plan over every cut, type, tensor- and
data-parallel degree and micro-batch, with a certificate (docs/parallel-plans.md)."""
