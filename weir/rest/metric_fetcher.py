"""``MetricFetcher``: the TaskManagers' metrics as the REST handlers read them, asked of
every TaskManager at once and kept per TaskManager (Flink's ``MetricFetcherImpl`` and
its ``MetricStore``).

- A TaskManager is asked at most once per ``metrics.fetcher.update-interval``, and has at
  most one fetch outstanding: one that does not answer is not asked again until that
  fetch ends (it answers late, fails, or passes its deadline).
- Flink's REST handlers never wait for a fetch: they read the store as it is. Ours wait
  briefly (``wait_s``, for all TaskManagers together) so that a page shows this moment's
  values, but only for TaskManagers whose last fetch answered in time. A TaskManager
  that did not is served from the last values it sent, marked stale, at once; the fetch
  outstanding for it fills the store whenever it lands.
- The store keeps a TaskManager's values until it leaves the ResourceManager's list
  (Flink's ``retainTaskManagers``).

Threading: ``metrics`` runs on the REST endpoint's worker threads, fetches complete on
whatever thread their future completes on (gRPC's). One lock guards the store; nothing
waits while holding it, and a fetch is started under it, so ``request`` must only start
a call and return.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from weir.core.errors import WeirError
from weir.core.metrics import MetricSample

__all__ = ["FetchedMetrics", "MetricFetcher", "TaskManagerMetrics"]

logger = logging.getLogger(__name__)


class _Listed(Protocol):
    """What the fetcher needs of a TaskManager of the list (``TaskManagerInfo``)."""

    @property
    def resource_id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class TaskManagerMetrics:
    """One answer of a TaskManager's ``GetMetrics``."""

    samples: tuple[MetricSample, ...] = ()
    prometheus_address: str = ""


@dataclass(frozen=True, slots=True)
class FetchedMetrics:
    """What the store holds for one TaskManager when a REST call reads it."""

    metrics: TaskManagerMetrics | None
    """The last values the TaskManager sent; None before its first answer."""
    stale: bool
    """The TaskManager did not answer its last fetch (in time): ``metrics`` are older."""


InfoT = TypeVar("InfoT", bound=_Listed)

MetricsRequest = Callable[[InfoT], "futures.Future[TaskManagerMetrics]"]
"""Starts one fetch from one TaskManager and returns at once; the future fails (with a
``WeirError``, unless a bug) when the TaskManager cannot be asked or does not answer by
the fetch's deadline."""

Waiter = Callable[[Collection["futures.Future[TaskManagerMetrics]"], float], object]


def _wait(pending: Collection[futures.Future[TaskManagerMetrics]], timeout_s: float) -> None:
    futures.wait(pending, timeout=timeout_s)


@dataclass(slots=True)
class _Entry:
    """One TaskManager in the store; changed under the fetcher's lock only."""

    last: TaskManagerMetrics | None = None
    asked_at: float = -math.inf
    outstanding: futures.Future[TaskManagerMetrics] | None = None
    answering: bool = True
    """Its last fetch answered within the wait (a new TaskManager is given the benefit)."""


class MetricFetcher(Generic[InfoT]):
    """See the module docstring; ``InfoT`` is the type of the list's entries."""

    def __init__(
        self,
        request: MetricsRequest[InfoT],
        *,
        update_interval_s: float,
        wait_s: float,
        clock: Callable[[], float] = time.monotonic,
        wait: Waiter = _wait,
    ) -> None:
        self._request = request
        self._update_interval_s = update_interval_s
        self._wait_s = wait_s
        self._clock = clock
        self._wait = wait
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def metrics(self, listed: Sequence[InfoT]) -> dict[str, FetchedMetrics]:
        """What the store holds for each TaskManager of ``listed`` (the ResourceManager's
        list, asked for by the caller on every call, so a TaskManager that just
        registered is never missing), after asking those that are due."""
        started: list[tuple[str, _Entry, futures.Future[TaskManagerMetrics]]] = []
        awaited: dict[futures.Future[TaskManagerMetrics], tuple[str, _Entry]] = {}
        now = self._clock()
        with self._lock:
            self._retain(info.resource_id for info in listed)
            for info in listed:
                entry = self._entries.setdefault(info.resource_id, _Entry())
                if entry.outstanding is None and now - entry.asked_at >= self._update_interval_s:
                    entry.asked_at = now
                    entry.outstanding = self._start(info)
                    started.append((info.resource_id, entry, entry.outstanding))
                if entry.outstanding is not None and entry.answering:
                    awaited[entry.outstanding] = (info.resource_id, entry)
        # Callbacks outside the lock: one on a future that is already done runs at once.
        for resource_id, entry, future in started:
            future.add_done_callback(functools.partial(self._landed, resource_id, entry))
        if awaited:
            self._wait(list(awaited), self._wait_s)
        late: list[str] = []
        with self._lock:
            for future, (resource_id, entry) in awaited.items():
                if entry.outstanding is future and not future.done():
                    entry.answering = False
                    late.append(resource_id)
            answer = {}
            for info in listed:
                entry = self._entries.get(info.resource_id) or _Entry()
                answer[info.resource_id] = FetchedMetrics(entry.last, stale=not entry.answering)
        for resource_id in late:
            logger.warning(
                "TaskManager %s did not send its metrics within %d ms; its last values are "
                "served, marked stale, until it answers",
                resource_id,
                self._wait_s * 1000,
            )
        return answer

    def _start(self, info: InfoT) -> futures.Future[TaskManagerMetrics]:
        logger.debug("asking TaskManager %s for its metrics", info.resource_id)
        try:
            return self._request(info)
        except WeirError as exc:  # cannot even ask (no channel): a fetch that failed
            failed: futures.Future[TaskManagerMetrics] = futures.Future()
            failed.set_exception(exc)
            return failed

    def _retain(self, resource_ids: Iterable[str]) -> None:
        """Forget the TaskManagers that left the list (under the lock)."""
        keep = set(resource_ids)
        for gone in self._entries.keys() - keep:
            del self._entries[gone]

    def _landed(
        self, resource_id: str, entry: _Entry, future: futures.Future[TaskManagerMetrics]
    ) -> None:
        failure = future.exception() if not future.cancelled() else futures.CancelledError()
        with self._lock:
            if entry.outstanding is future:
                entry.outstanding = None
            was_answering = entry.answering
            if failure is None:
                entry.last = future.result()
                entry.answering = True
            else:
                entry.answering = False
        if failure is not None and was_answering:
            # A TaskManager going away while we ask: the heartbeat monitor deals with it.
            # Anything but a WeirError is a bug of ours: keep its traceback.
            logger.warning(
                "no metrics from TaskManager %s: %s; its last values are served, marked "
                "stale, until it answers",
                resource_id,
                failure,
                exc_info=None if isinstance(failure, WeirError) else failure,
            )
        elif failure is not None:
            logger.debug("no metrics from TaskManager %s again: %s", resource_id, failure)
        elif not was_answering:
            logger.info("TaskManager %s sends its metrics again", resource_id)
