"""Writing matplotlib figures (Agg backend, no screen needed) through hps's one output writer."""

from __future__ import annotations

import matplotlib

from hps.config.files import atomic_write, figure_format

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save_figure(fig, path, dpi: int = 110) -> None:
    """Write `fig` to `path` in the format its suffix names (.png, .pdf or .svg; ConfigError for
    any other) through `atomic_write` (a temporary file, then a rename or a write into a device
    or FIFO), then close it, so a failed or interrupted write never leaves a half-written image."""
    try:
        fmt = figure_format(path, str(path))
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=fmt), suffix=f".{fmt}")
    finally:
        plt.close(fig)
