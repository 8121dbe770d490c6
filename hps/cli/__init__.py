"""The `hps` command line: parses, calls the library, prints. Nothing imports it."""
