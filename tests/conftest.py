"""Test session set-up: 8 fake CPU devices, LLVM's quickest code generation and JAX's persistent
compilation cache.

The suite's programs are small and mostly compiled once (on a clean checkout, compiling is most
of its time), so LLVM runs without its optimisation passes (`xla_backend_optimization_level=0`:
compiles about a third faster; XLA's own passes, and so the HLO, are unchanged). XLA_FLAGS must
be set before JAX is imported, so this runs first; subprocesses of the tests inherit it.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_backend_optimization_level=0")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

from hps.cli.main import MIN_COMPILE_SECONDS  # noqa: E402

_CACHE = os.environ.get("JAX_COMPILATION_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".jax_cache"))
jax.config.update("jax_compilation_cache_dir", os.path.abspath(_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)  # as the CLI

import textwrap  # noqa: E402

import pytest  # noqa: E402

from tests.helpers import EXPERIMENT  # noqa: E402


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """An experiment file training tests/helpers.py's TINY run."""
    path = tmp_path_factory.mktemp("exp") / "tiny.py"
    path.write_text(textwrap.dedent(EXPERIMENT))
    return path
