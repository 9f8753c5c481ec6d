"""Live progress line on stderr: done/total, running, failed, elapsed, ETA."""

from __future__ import annotations

import sys
import threading
import time

__all__ = ["Progress", "format_seconds"]


def format_seconds(s):
    if s is None or s != s or s == float("inf"):
        return "--:--"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


class Progress:
    """Counts finished/failed tasks and redraws one status line.

    On a terminal the line is redrawn in place (``\\r``) every ``interval``
    seconds by a background thread; otherwise a full line is written at most
    every ``quiet_interval`` seconds (so logs of cron runs stay short).
    """

    def __init__(self, total, slots, label="run", stream=None, interval=1.0, quiet_interval=30.0,
                 enabled=True, already_done=0):
        self.total = int(total)
        self.slots = max(1, int(slots))
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if self.tty else quiet_interval
        self.enabled = enabled
        self.done = int(already_done)
        self.skipped = int(already_done)
        self.failed = 0
        self.t0 = time.time()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._last = 0.0

    def line(self):
        elapsed = time.time() - self.t0
        finished = self.done + self.failed
        remaining = self.total - finished
        running = min(remaining, self.slots)
        new = self.done - self.skipped + self.failed
        eta = elapsed / new * remaining if new > 0 else None
        if remaining == 0:
            eta = 0.0
        return (f"[{self.label}] {self.done}/{self.total} done, {running} running, "
                f"{self.failed} failed, elapsed {format_seconds(elapsed)}, "
                f"ETA {format_seconds(eta)}")

    def _draw(self, final=False):
        if not self.enabled:
            return
        with self._lock:
            text = self.line()
            if self.tty:
                self.stream.write("\r" + text + ("\n" if final else "\x1b[K"))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
            self._last = time.time()

    def _loop(self):
        while not self._stop.wait(self.interval):
            self._draw()

    def start(self):
        self._draw()
        if self.enabled:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def task_done(self, failed=False):
        with self._lock:
            if failed:
                self.failed += 1
            else:
                self.done += 1
        if self.tty:
            self._draw()

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._draw(final=True)
