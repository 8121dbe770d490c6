"""Reports: JSON-ready dicts and plain-text tables of results (no printing here)."""
