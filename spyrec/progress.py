"""Progress inside a long compile stage: a hook the driver offers to passes.

A pass whose work can take seconds (scheduling a large matmul's cores, tiling many kernels)
calls `report(what, done, total)` as it goes; the call costs a context-variable read when
nobody listens. The driver installs a listener for each pass with `listening`, and the CLI
turns the reports into an updating line on a terminal or periodic lines in a log
(`spyrec.cli`). Passes run in worker processes report nothing (the listener lives in the
compiling process).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# (what, done, total): `what` names the work in a few words, e.g. "core 3 of kernel k0"
Listener = Callable[[str, int, int], None]

_LISTENER: ContextVar[Listener | None] = ContextVar("spyrec_progress", default=None)


def report(what: str, done: int, total: int) -> None:
    """Tell the listener (if any) that `done` of `total` units of `what` are finished."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(what, done, total)


@contextmanager
def listening(listener: Listener | None) -> Iterator[None]:
    """Send the reports made inside the block to `listener` (None: to nobody)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
