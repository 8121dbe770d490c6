"""report.md of a run folder: title, config, the table, figures, how to regenerate, the machine."""

from __future__ import annotations

import dataclasses
import platform
from pathlib import Path

from hps.config.machine import cpu_cores
from hps.report.tables import format_number


def markdown_table(headers: list[str], rows: list[list]) -> str:
    """A GitHub Markdown table, numbers formatted as the CLI's text tables format them."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(format_number(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_lines() -> list[str]:
    """platform, Python, JAX and its devices, CPU cores."""
    import jax

    devices = jax.devices()
    kinds = sorted({getattr(d, "device_kind", d.platform) for d in devices})
    return [
        f"- platform: {platform.platform()} ({platform.machine()}), {cpu_cores()} CPU cores",
        f"- Python {platform.python_version()}, jax {jax.__version__}",
        f"- devices: {len(devices)} × {', '.join(kinds)} ({devices[0].platform})",
    ]


def regenerate_command(config, out: Path, source: str | None) -> str:
    if source is None:
        return f"python -c 'from hps.studies import run_experiment; run_experiment(CONFIG, \"{out}\")'"
    return f"hps run {source} --out {out.parent}"


def report_markdown(config, summary, out: Path, source: str | None, timings: dict) -> str:
    fields = [[f.name, repr(getattr(config, f.name))] for f in dataclasses.fields(config)]
    parts = [
        f"# {summary.title or config.name}",
        f"Experiment `{config.name}` ({type(config).__name__}).",
        "## Configuration\n\n" + markdown_table(["field", "value"], fields),
        "## Results\n\n" + markdown_table(summary.headers, summary.rows),
        *(f"![{Path(name).stem}]({name})" for name, _ in summary.figures),
    ]
    if summary.markdown:
        parts.append(summary.markdown.strip())
    parts += [
        "## Reproduce\n\n```bash\n" + regenerate_command(config, out, source) + "\n```\n\n"
        "`results.json` holds the figures above; the same config and seed give the same file. "
        "Timings are in `timings.json`.",
        "## Machine\n\n"
        + "\n".join(machine_lines())
        + f"\n- items took {timings['item_seconds']:.1f} s in all; this run {timings['run_seconds']:.1f} s "
        f"({len(timings['computed_now'])} of {len(timings['items'])} items computed now)",
    ]
    return "\n\n".join(parts) + "\n"
