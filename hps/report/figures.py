"""Writing matplotlib figures (Agg backend, no screen needed) atomically."""

from __future__ import annotations

import matplotlib

from hps.config.files import atomic_write

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save_figure(fig, path, dpi: int = 110) -> None:
    """Write `fig` as PNG to `path` through `atomic_write` (a temporary file and a rename), then
    close it, so a failed or interrupted write never leaves a half-written image."""
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format="png"), suffix=".png")
    finally:
        plt.close(fig)
