"""The fault suite's three parts, collected through tests/test_faults.py: run folders and
checkpoints (`runs`), numbers past float32 and counts (`numbers`), sizes and hygiene (`sizes`)."""
