"""Shows an attached client (``weir run`` without ``-d``) each restart of its job as it
happens: the attempt the restart deploys and the first line of its cause, read from the
job's exception history."""

from __future__ import annotations

import logging
import threading
from typing import TextIO

from weir.client.dispatcher_client import DispatcherGateway
from weir.core.errors import WeirError
from weir.core.exception_history import ExceptionHistoryEntry
from weir.core.job_info import JobDetailsInfo
from weir.core.job_status import JobStatus

logger = logging.getLogger(__name__)

# How long one wait for a change of the job stays open on the Dispatcher, which answers
# as soon as the job's status changes (a restart among them): it adds no latency, it only
# bounds how long a call stays open.
_WAIT_SLICE_MS = 10_000


def restart_line(job_id: str, entry: ExceptionHistoryEntry) -> str:
    """``Job <id> is restarting (attempt 2) after: Map (1/2) failed: ValueError: ...``"""
    return f"Job {job_id} is restarting (attempt {entry.attempt_number + 1}) after: {entry.summary}"


class RestartReporter:
    """Follows one job on a thread of its own (long polls of the Dispatcher) and writes a
    line per restart to ``out``, each once, oldest first, until the job ends or
    ``close()``. Failures that ended the job are not restarts: the client reports them
    as the job's result."""

    def __init__(self, gateway: DispatcherGateway, job_id: str, out: TextIO) -> None:
        self._gateway = gateway
        self._job_id = job_id
        self._out = out
        self._lock = threading.Lock()
        self._shown: tuple[int, int] = (-1, -1)
        """(attempt, timestamp) of the last restart written: the history is in that order."""
        self._closed = threading.Event()
        self._thread = threading.Thread(
            target=self._follow, name=f"restarts-{job_id[:8]}", daemon=True
        )

    def start(self) -> RestartReporter:
        self._thread.start()
        return self

    def _follow(self) -> None:
        try:
            version = self._show(self._gateway.job_details(self._job_id))
            while not self._closed.is_set():
                details = self._gateway.wait_for_result(self._job_id, _WAIT_SLICE_MS, version)
                version = self._show(details)
                if JobStatus[details.status].is_globally_terminal_state():
                    return
        except WeirError as exc:
            if not self._closed.is_set():
                # The program's own wait for the job reports what is wrong with the cluster;
                # this only costs the restart lines.
                logger.warning(
                    "restarts of job %s are not shown from now on: %s", self._job_id, exc
                )

    def _show(self, details: JobDetailsInfo, *, closing: bool = False) -> int:
        with self._lock:
            if self._closed.is_set() and not closing:
                return details.status_version  # an answer that came after close()
            for entry in details.exception_history:
                key = (entry.attempt_number, entry.timestamp_ms)
                if entry.restarted and key > self._shown:
                    print(restart_line(self._job_id, entry), file=self._out, flush=True)
                    self._shown = key
        return details.status_version

    def close(self) -> None:
        """Write the restarts not written yet (of the job's details now: all of them once
        the job ended, whether or not the thread got the last answer) and stop following."""
        self._closed.set()
        try:
            self._show(self._gateway.job_details(self._job_id), closing=True)
        except WeirError as exc:
            logger.warning("the restarts of job %s could not be read: %s", self._job_id, exc)
