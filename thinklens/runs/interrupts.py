"""Ctrl-C and ``kill``: SIGINT and SIGTERM stop a job the same way, wherever it is.

While a job runs (:func:`thinklens.runs.jobs.execute`), both signals raise :class:`JobInterrupted` in the main
thread: a ``KeyboardInterrupt`` that knows its signal, so no ``except Exception`` inside a job or a library swallows
it. The runner marks the run folder ``interrupted`` and re-raises; the CLI prints one line and exits with
``128 + signal`` (130 for SIGINT, 143 for SIGTERM), as a shell reports a process killed by that signal. Re-running
the same command resumes: finished stage items are read back (:mod:`thinklens.runs.stages`).

Libraries that install their own handlers for these signals (sae-lens's trainer turns them into its own
``InterruptedException``, an ``Exception``) are kept from doing so by their callers; a job never sees a foreign
interrupt type.

Example:
    >>> import signal
    >>> with catch_signals():
    ...     try:
    ...         signal.raise_signal(signal.SIGTERM)
    ...     except JobInterrupted as e:
    ...         print(e.signal_name, e.exit_code)
    SIGTERM 143
    >>> signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the previous handler is back
    True
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class JobInterrupted(KeyboardInterrupt):
    """A job stopped by a signal (SIGINT: Ctrl-C; SIGTERM: ``kill``, a scheduler's preemption)."""

    def __init__(self, signum: int = signal.SIGINT, run: Path | str | None = None):
        super().__init__(signum)
        self.signum = int(signum)
        """The signal's number."""
        self.run = None if run is None else Path(run)
        """The run folder it left ``interrupted`` (None: stopped before the folder was opened)."""

    @property
    def signal_name(self) -> str:
        """``SIGINT`` or ``SIGTERM``."""
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """The exit status a shell gives a process killed by the signal: 130 (SIGINT), 143 (SIGTERM)."""
        return 128 + self.signum

    def __str__(self) -> str:
        where = f"; re-run the same command to resume {self.run}" if self.run is not None else ""
        return f"interrupted by {self.signal_name}{where}"

    @classmethod
    def of(cls, error: BaseException, run: Path | str | None = None) -> "JobInterrupted":
        """``error`` (a JobInterrupted, or a plain KeyboardInterrupt: SIGINT) with the run folder it left."""
        return cls(getattr(error, "signum", signal.SIGINT), run if run is not None else getattr(error, "run", None))


class _Guard:
    """The state of one :func:`catch_signals` block: whether a signal is being handled (shielded)."""

    def __init__(self) -> None:
        self.shielded = False

    def handler(self, signum: int, frame: Any) -> None:
        if self.shielded:  # the runner is recording an interruption already under way: a second signal is dropped
            return
        raise JobInterrupted(signum)

    @contextmanager
    def shield(self) -> Iterator[None]:
        """No signal raises inside (the run folder's meta is being written after a first one)."""
        self.shielded = True
        try:
            yield
        finally:
            self.shielded = False


@contextmanager
def catch_signals() -> Iterator[_Guard]:
    """SIGINT and SIGTERM raise :class:`JobInterrupted` inside the block; the previous handlers come back after it.

    Outside the main thread (signals reach only the main thread) nothing is installed, and a KeyboardInterrupt
    there is still turned into JobInterrupted by the runner.
    """
    guard = _Guard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    old = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, guard.handler)
    try:
        yield guard
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
