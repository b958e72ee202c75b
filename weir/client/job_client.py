"""The ``JobClient`` of a job running in a cluster (Flink's ClusterClientJobClientAdapter)
and the iterator that streams a collect sink's results to the client in batches."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

from weir.client.dispatcher_client import DispatcherGateway
from weir.core.completable_future import CompletableFuture
from weir.core.errors import JobExecutionError
from weir.core.executor import JobExecutionResult, JobID
from weir.core.job_client import JobClient
from weir.core.job_info import JobDetailsInfo
from weir.core.job_status import JobStatus
from weir.core.serializers import deserialize_batch

logger = logging.getLogger(__name__)

# How long one result query waits on the server before the client asks again. The
# server answers as soon as the job changes, so this adds no latency; it only bounds how
# long a call stays open.
_WAIT_SLICE_MS = 10_000
# Batches per fetch: enough to amortise the round trip, few enough to bound memory.
_FETCH_BATCHES = 16
# Closing a results iterator early cancels the job and waits this long for it to end, so
# the program goes on with its slots free (a next job gets them, the process can exit at
# once). Tasks see a cancel between two batches, so a job ends in tens of ms; one that
# takes longer (user code that ignores the cancel) ends on its own after this.
_CANCEL_WAIT_S = 5.0
_GOING_DOWN = frozenset(
    s.name for s in (JobStatus.FAILED, JobStatus.FAILING, JobStatus.CANCELED, JobStatus.CANCELLING)
)


def raise_for_status(details: JobDetailsInfo) -> None:
    if details.status == JobStatus.FAILED.name:
        msg = f"Job {details.job_name!r} ({details.job_id}) failed: {details.failure_cause}"
        raise JobExecutionError(
            msg, job_id=details.job_id, status=details.status, cause=details.failure_cause
        )
    if details.status == JobStatus.CANCELED.name:
        msg = f"Job {details.job_name!r} ({details.job_id}) was cancelled"
        raise JobExecutionError(msg, job_id=details.job_id, status=details.status)


class ClusterJobClient(JobClient):
    """The ``JobClient`` of a job submitted to a Dispatcher (``weir run``, the
    MiniCluster): every call is a request to the Dispatcher at once."""

    def __init__(self, gateway: DispatcherGateway, job_id: str) -> None:
        self._gateway = gateway
        self._job_id = job_id

    def get_job_id(self) -> JobID:
        return JobID(self._job_id)

    def get_job_status(self) -> CompletableFuture:
        return CompletableFuture.completed(self._status())

    def cancel(self) -> CompletableFuture:
        self._gateway.cancel_job(self._job_id)
        return CompletableFuture.completed(None)

    def get_job_execution_result(self) -> CompletableFuture:
        return CompletableFuture(self._execution_result, self._ended)

    def trigger_savepoint(self, savepoint_directory: str | None = None) -> CompletableFuture:
        """Take a savepoint now (PyFlink's ``JobClient.trigger_savepoint``); the future's
        result is the savepoint's path. Without a directory:
        ``execution.checkpointing.savepoint-dir`` of the job."""
        return self._savepoint(savepoint_directory, stop=False, drain=False)

    def stop_with_savepoint(
        self, advance_to_end_of_event_time: bool, savepoint_directory: str | None = None
    ) -> CompletableFuture:
        """Stop the job with a savepoint (``advance_to_end_of_event_time``: emit
        MAX_WATERMARK first, as ``flink stop --drain``); the result is its path."""
        return self._savepoint(savepoint_directory, stop=True, drain=advance_to_end_of_event_time)

    def _savepoint(self, directory: str | None, *, stop: bool, drain: bool) -> CompletableFuture:
        # Triggered at once, as PyFlink's are; the future waits for the savepoint.
        pending: Future[str] = Future()

        def trigger() -> None:
            try:
                path = self._gateway.trigger_savepoint(
                    self._job_id, directory, stop=stop, drain=drain
                )
            except BaseException as exc:  # handed to whoever reads the future
                pending.set_exception(exc)
            else:
                pending.set_result(path)

        threading.Thread(target=trigger, name=f"savepoint-{self._job_id[:8]}", daemon=True).start()
        return CompletableFuture(pending.result, pending.done)

    def collect(self, operator_id: str) -> CollectResultIterator:
        return CollectResultIterator(self, self._gateway, operator_id)

    def wait_for_terminal(self, timeout_s: float | None = None) -> JobDetailsInfo:
        """A long poll: each answer carries the version of what the Dispatcher knows, and
        the next question waits until that changes (the server holds no thread for it).
        With ``timeout_s``, the details as they are once it has passed."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        version = 0
        while True:
            wait_ms = _WAIT_SLICE_MS
            if deadline is not None:
                wait_ms = max(0, min(wait_ms, int((deadline - time.monotonic()) * 1000)))
            details = self._gateway.wait_for_result(self._job_id, wait_ms, version)
            if JobStatus[details.status].is_globally_terminal_state():
                return details
            if deadline is not None and time.monotonic() >= deadline:
                return details
            version = details.status_version

    def _status(self) -> JobStatus:
        return JobStatus[self._gateway.job_details(self._job_id).status]

    def _ended(self) -> bool:
        return self._status().is_globally_terminal_state()

    def _execution_result(self) -> JobExecutionResult:
        """Blocks until the job ends; raises JobExecutionError unless it FINISHED."""
        details = self.wait_for_terminal()
        raise_for_status(details)
        return JobExecutionResult(
            details.job_id, max(0, details.end_time_ms - details.start_time_ms)
        )


class CollectResultIterator:
    """Iterates a collect sink's records; pulls batches, so memory stays bounded.

    Closing it before the end cancels the job, as Flink's CloseableIterator does.
    """

    def __init__(self, client: ClusterJobClient, gateway: DispatcherGateway, operator_id: str):
        self._client = client
        self._gateway = gateway
        self._operator_id = operator_id
        self._records: deque[Any] = deque()
        self._ended = False
        self._job_ended = False
        self._closed = False

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        while not self._records:
            if self._closed:
                raise StopIteration
            if self._ended:
                self._await_job_end()
                raise StopIteration
            self._fetch()
        return self._records.popleft()

    def _await_job_end(self) -> None:
        """Every record is read: the iteration ends when the job does, as Flink's does
        (with final checkpoints the last results are out before the tasks have exited),
        so a program that returns right after does not cancel a job about to finish."""
        if not self._job_ended:
            self._job_ended = True
            raise_for_status(self._client.wait_for_terminal())

    def _fetch(self) -> None:
        reply = self._gateway.fetch_collect(
            str(self._client.get_job_id()), self._operator_id, _FETCH_BATCHES, _WAIT_SLICE_MS
        )
        for batch in reply.batches:
            self._records.extend(deserialize_batch(batch))
        if reply.end_of_data:
            self._ended = True
            if reply.job_status in _GOING_DOWN:
                self._await_job_end()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._ended:
            try:
                if not self._client.get_job_status().result().is_globally_terminal_state():
                    self._client.cancel()
                    details = self._client.wait_for_terminal(_CANCEL_WAIT_S)
                    if not JobStatus[details.status].is_globally_terminal_state():
                        logger.info(
                            "job %s is still %s %.0f s after its results iterator was "
                            "closed; it ends on its own",
                            details.job_id,
                            details.status,
                            _CANCEL_WAIT_S,
                        )
            except JobExecutionError:
                logger.debug("job already gone while closing its result iterator", exc_info=True)

    def __enter__(self) -> CollectResultIterator:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
