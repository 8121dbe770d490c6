"""The plan contract: what a planner returns (Plan, PlanScore, PlanResult), what it may spend
(Budget), its signature (Planner), and the memory gate every model's tables pass before they
are built. The problem a planner takes, the registry and the comparison are `hps.methods`'."""
