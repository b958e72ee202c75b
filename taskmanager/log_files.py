"""A TaskManager's own log files, as Flink keeps them: ``taskmanager.log`` (its logging)
and ``taskmanager.out`` (what is printed in it: ``print()`` in user functions of jobs
without a client attached, ``DataStream.print()``, anything written to stdout or stderr),
in ``{env.log.dir}/taskmanager-{resource id}/``.

Both roll over at ``env.log.max-file-size`` into ``.1``, ``.2``, ... and keep
``env.log.max`` old files, so one job printing without end fills at most
``(env.log.max + 1) x env.log.max-file-size`` per file, and none of it reaches the master's
log (on ``local[N]`` a TaskManager's stdout and stderr are the Spark driver's, which is the
master process). Without ``env.log.dir`` (the embedded MiniCluster) nothing changes:
TaskManagers log and print where their process does.

``TaskManagerLogFiles`` is entered by the TaskManager's entry point around its whole life
(entry points configure handlers, library code does not) and restores what it changed on
exit: a Spark Python worker outlives the TaskManager it hosted.
"""

from __future__ import annotations

import contextlib
import io
import logging
import logging.handlers
import os
import threading
from collections.abc import Mapping
from types import TracebackType

from weir.core import config as cfg
from weir.taskmanager.task_stdout import untargeted_output

LOG_FILE = "taskmanager.log"
OUT_FILE = "taskmanager.out"
_FORMAT = "%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s"


class RollingTextFile(io.TextIOBase):
    """A text file that rolls over to ``path.1`` ... ``path.{backups}`` before a write
    would take it past ``max_bytes`` (as log4j's SizeBasedTriggeringPolicy with the
    DefaultRolloverStrategy, Flink's default). Thread-safe; every line is flushed."""

    def __init__(self, path: str, max_bytes: int, backups: int) -> None:
        super().__init__()
        self.path = path
        self._max_bytes = max_bytes
        self._backups = backups
        self._lock = threading.Lock()
        self._file = open(path, "ab")
        self._size = self._file.tell()

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "backslashreplace")
        with self._lock:
            if self._file.closed:
                return len(text)  # a late write after close (a thread still printing)
            if self._size and self._size + len(data) > self._max_bytes:
                self._roll_over()
            self._file.write(data)
            self._size += len(data)
            if b"\n" in data:
                self._file.flush()
        return len(text)

    def _roll_over(self) -> None:
        self._file.close()
        for index in range(self._backups - 1, 0, -1):
            older = f"{self.path}.{index}"
            if os.path.exists(older):
                os.replace(older, f"{self.path}.{index + 1}")
        os.replace(self.path, f"{self.path}.1")
        self._file = open(self.path, "ab")
        self._size = 0

    def flush(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        with self._lock:
            self._file.close()
        super().close()


class TaskManagerLogFiles:
    """Sends a TaskManager's logging and output to its files; see the module docstring."""

    def __init__(self, config: Mapping[str, str], resource_id: str) -> None:
        log_dir = cfg.get(config, cfg.CLUSTER_LOG_DIR)
        self.directory = os.path.join(log_dir, f"taskmanager-{resource_id}") if log_dir else ""
        self._max_bytes = cfg.get(config, cfg.LOG_MAX_FILE_SIZE)
        self._backups = cfg.get(config, cfg.LOG_MAX)
        self._undo = contextlib.ExitStack()

    def __enter__(self) -> TaskManagerLogFiles:
        if not self.directory:
            return self
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as exc:
            # A host of its own may lack the master's log directory: run, and say so where
            # the process's own output goes.
            logging.getLogger(__name__).warning(
                "cannot keep TaskManager logs in %s (%s); logging to the process's output",
                self.directory,
                exc,
            )
            return self
        with contextlib.ExitStack() as undo:
            handler = logging.handlers.RotatingFileHandler(
                os.path.join(self.directory, LOG_FILE),
                maxBytes=self._max_bytes,
                backupCount=self._backups,
                encoding="utf-8",
            )
            undo.callback(handler.close)
            handler.setFormatter(logging.Formatter(_FORMAT))
            root = logging.getLogger()
            root.addHandler(handler)
            undo.callback(root.removeHandler, handler)
            # A Spark Python worker leaves logging unconfigured (WARNING); a TaskManager's
            # lifecycle is logged at INFO.
            undo.callback(root.setLevel, root.level)
            if root.getEffectiveLevel() > logging.INFO:
                root.setLevel(logging.INFO)
            out = RollingTextFile(
                os.path.join(self.directory, OUT_FILE), self._max_bytes, self._backups
            )
            undo.callback(out.close)
            undo.enter_context(untargeted_output(out))
            self._undo = undo.pop_all()
        logging.getLogger(__name__).info("TaskManager logs in %s", self.directory)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._undo.close()
