"""The plan contract: what a planner returns, what it may spend, and the memory gate every
model's tables pass before they are built."""
