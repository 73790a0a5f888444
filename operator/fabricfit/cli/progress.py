"""A progress line on stderr for long runs (``simulate``, ``calibrate``, a slow ``plan``).

Theory of operation
-------------------
A :class:`Progress` is a context manager around the slow part of a command. It draws only when
stderr is a terminal and the command prints text (never with ``--json``/``-o``: a script reads
those, and a pipe or a log file would keep every redraw). It draws one line, rewritten in place
(carriage return, the text, erase to the end of the line), at most every
:data:`REDRAW_SECONDS`, and only once the run has lasted ``delay_seconds`` — a quick ``plan``
shows nothing. A background thread redraws the elapsed time while the work runs without news;
the work reports news with :meth:`Progress.update` (a phase, or ``done``/``total``), which is
only stored — the thread draws it. On leaving, the line is erased, so the command's own output
(on stdout, the same terminal) starts on a clean line. Nothing here runs unless it draws: the
thread is started only for a terminal.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

REDRAW_SECONDS = 0.2
ERASE_LINE = "\r\x1b[K"
MAX_LINE_CHARS = 100


class Progress:
    """``with Progress("fabricfit simulate", enabled=...) as progress: progress.update(...)``."""

    def __init__(
        self,
        command: str,
        *,
        enabled: bool = True,
        delay_seconds: float = 0.0,
        stream: TextIO | None = None,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._command = command
        self._delay_seconds = delay_seconds
        self._active = enabled and _is_terminal(self._stream)
        self._phase = ""
        self._count = ""
        self._drawn = False
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)

    def __enter__(self) -> Progress:
        if self._active:
            self._start = time.monotonic()
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if not self._active:
            return
        self._stop.set()
        self._thread.join()
        with self._lock:
            if self._drawn:
                self._write(ERASE_LINE)

    def update(
        self, phase: str | None = None, done: int | None = None, total: int | None = None
    ) -> None:
        """News for the line: a new ``phase`` (which clears the count), and/or ``done`` of
        ``total`` items."""
        if not self._active:
            return
        if phase is not None:
            self._phase, self._count = phase, ""
        if done is not None:
            self._count = f"{done:,}" + (f"/{total:,}" if total is not None else "")

    def line(self) -> str:
        """The text drawn now: command, phase, count, elapsed seconds."""
        elapsed = time.monotonic() - self._start
        parts = [f"{self._command}:", self._phase, self._count, f"({elapsed:.0f} s)"]
        text = " ".join(p for p in parts if p)
        return text if len(text) <= MAX_LINE_CHARS else text[: MAX_LINE_CHARS - 3] + "..."

    def _run(self) -> None:
        if self._stop.wait(self._delay_seconds):
            return
        while self._active:
            with self._lock:
                if self._phase or self._count:  # nothing to say before the first news
                    self._write(ERASE_LINE + self.line())
                    self._drawn = True
            if self._stop.wait(REDRAW_SECONDS):
                return

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: the work goes on
            self._active = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False
