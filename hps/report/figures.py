"""Writing matplotlib figures (Agg backend, no screen needed) atomically."""

from __future__ import annotations

import os
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save_figure(fig, path, dpi: int = 110) -> None:
    """Write `fig` as PNG to `path` through a temporary file and a rename, then close it, so a
    failed or interrupted write never leaves a half-written image."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, tmp = tempfile.mkstemp(suffix=".png", dir=directory)
    os.close(handle)
    try:
        fig.savefig(tmp, dpi=dpi)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)
