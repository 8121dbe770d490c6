"""SIGINT, SIGTERM and SIGHUP end a command the same way: `Stopped` (a KeyboardInterrupt) is
raised in the main thread, so every `finally` runs (locks released, manifests closed) and the
CLI prints one line and exits with 128 + signum. Inside `deferred()` (an output written and
recorded in its manifest, a checkpoint committed with its metrics record) a signal waits until
the block ends, so a stop never lands between the two. After the first stop, further signals
are ignored while the command unwinds. Nothing here prints."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from hps.errors import Stopped

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _State:
    deferring = 0
    pending: int | None = None
    stopping = False


def _handle(signum, frame) -> None:
    if _State.stopping:
        return
    if _State.deferring:
        _State.pending = signum
        return
    _State.stopping = True
    raise Stopped(signum)


@contextmanager
def handling() -> Iterator[None]:
    """Handle SIGNALS as `Stopped` for the block (the main thread only), then restore the
    handlers there were. Outside the main thread, where handlers cannot be set, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _State.deferring, _State.pending, _State.stopping = 0, None, False
    previous = {signum: signal.signal(signum, _handle) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """A signal arriving in the block is raised as `Stopped` when the block ends (unless the
    block raised)."""
    _State.deferring += 1
    try:
        yield
    finally:
        _State.deferring -= 1
    if not _State.deferring and _State.pending is not None and not _State.stopping:
        signum, _State.pending, _State.stopping = _State.pending, None, True
        raise Stopped(signum)
