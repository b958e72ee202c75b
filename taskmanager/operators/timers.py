"""Timers: per-key event-time and processing-time timers, and the task's processing clock.

``InternalTimerService`` keeps the timers of one keyed operator (Flink's
``InternalTimerServiceImpl``). A timer is ``(timestamp, key, namespace)``; the namespace
is ``None`` for a process function's timers and the window for a window operator's.
Timers are deduplicated: registering the same one twice keeps one.

The canonical set of timers lives in the keyed state backend, in two namespaced tables
named ``_weir_timers_event`` and ``_weir_timers_processing`` holding ``True`` for each
key in each ``(timestamp, namespace)`` it has a timer at, so a checkpoint captures them
with the rest of the keyed state, grouped by key group, and a restore at another
parallelism takes the timers of the key groups it owns. A heap of ``(timestamp, seq,
key, namespace)`` orders them for firing; deleting a timer only removes it from its
table, and the heap skips entries that are no longer registered when they come up.

Event-time timers fire when the watermark reaches them (``advance_watermark``), in
timestamp order, with the backend's current key set to the timer's key. They fire in
rounds, as PyFlink's do (its Java timer service hands the due timers to Python
together, and sees what Python registered or deleted only after they all fired): a
round takes out every timer due when it starts and fires them all, even one that an
earlier firing of the round deleted; a timer that a firing registers at or before the
watermark (the same one again, too) fires in a further round of the same advance.
Processing-time timers fire from the task's ``ProcessingTimeService``, which runs
callbacks on the task thread through its mailbox, never concurrently with records.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from weir.taskmanager.operators.base import MIN_WATERMARK
from weir.taskmanager.state.backend import KeyedStateBackend, NamespacedTable

logger = logging.getLogger(__name__)

EVENT_TIMERS = "_weir_timers_event"
PROCESSING_TIMERS = "_weir_timers_processing"


class Triggerable(Protocol):
    """What fires when a timer is due; the backend's current key is the timer's key."""

    def on_event_time(self, timestamp: int, key: Any, namespace: Any) -> None: ...

    def on_processing_time(self, timestamp: int, key: Any, namespace: Any) -> None: ...


class ProcessingTimeService:
    """Runs callbacks on the task thread at processing times (Flink's
    ``ProcessingTimeService``).

    One daemon thread per task sleeps until the earliest due time and then hands the
    callback to the task's mailbox (``post``), so callbacks run between two batches on
    the task thread. The thread starts with the first ``schedule``.
    """

    def __init__(
        self,
        clock_ms: Callable[[], int],
        post: Callable[[Callable[[], None]], None],
        name: str = "timers",
    ) -> None:
        self._clock_ms = clock_ms
        self._post = post
        self._name = name
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def current_processing_time(self) -> int:
        return self._clock_ms()

    def schedule(self, timestamp_ms: int, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the task thread once the clock reached ``timestamp_ms``."""
        with self._cond:
            if self._closed:
                return
            heapq.heappush(self._queue, (timestamp_ms, next(self._seq), callback))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, daemon=True, name=f"{self._name}-processing-time"
                )
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if not self._queue:
                    self._cond.wait()
                    continue
                due = self._queue[0][0]
                wait_ms = due - self._clock_ms()
                if wait_ms > 0:
                    self._cond.wait(wait_ms / 1000.0)
                    continue
                _, _, callback = heapq.heappop(self._queue)
                try:
                    self._post(callback)
                except Exception:  # the task ended: nothing left to run callbacks for
                    logger.debug("processing-time callback dropped: the task has ended")
                    self._closed = True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify_all()


class InternalTimerService:
    """The event-time and processing-time timers of one keyed operator."""

    def __init__(
        self,
        backend: KeyedStateBackend,
        triggerable: Triggerable,
        processing_time: ProcessingTimeService | None,
        clock_ms: Callable[[], int],
    ) -> None:
        self._backend = backend
        self._triggerable = triggerable
        self._processing_time = processing_time
        self._clock_ms = clock_ms
        self._event: NamespacedTable = backend.get_namespaced_table(EVENT_TIMERS)
        self._processing: NamespacedTable = backend.get_namespaced_table(PROCESSING_TIMERS)
        self._seq = 0
        self._event_heap: list[tuple[int, int, Any, Any]] = []
        self._processing_heap: list[tuple[int, int, Any, Any]] = []
        self._scheduled_processing: int | None = None
        # Processing-time timers of an operator as a whole (one per window, not per key):
        # called with the time first, whenever processing-time timers fire.
        self._fire_operator_timers: Callable[[int], None] | None = None
        self.current_watermark = MIN_WATERMARK
        self._rebuild()

    def _rebuild(self) -> None:
        """Index the timers already in the backend (restored from a checkpoint)."""
        self._event_heap = [
            (ts, self._next_seq(), key, ns) for key, (ts, ns), _ in self._event.entries()
        ]
        heapq.heapify(self._event_heap)
        self._processing_heap = [
            (ts, self._next_seq(), key, ns) for key, (ts, ns), _ in self._processing.entries()
        ]
        heapq.heapify(self._processing_heap)
        if self._processing_heap:
            self._schedule_processing(self._processing_heap[0][0])

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    # --- registration (current key of the backend) -----------------------------------

    def current_processing_time(self) -> int:
        return self._clock_ms()

    def register_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        key = self._backend.current_key
        entry = (timestamp, namespace)
        if self._event.get(key, entry) is None:
            self._event.put(key, entry, True)
            heapq.heappush(self._event_heap, (timestamp, self._next_seq(), key, namespace))

    def has_event_time_timer(self, namespace: Any, timestamp: int) -> bool:
        """Whether the current key has an event-time timer at ``timestamp`` for
        ``namespace``."""
        return self._event.get(self._backend.current_key, (timestamp, namespace)) is not None

    def has_event_time_timers(self) -> bool:
        """Whether any key has an event-time timer."""
        return not self._event.is_empty()

    def delete_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        self._event.remove(self._backend.current_key, (timestamp, namespace))

    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        key = self._backend.current_key
        entry = (timestamp, namespace)
        if self._processing.get(key, entry) is None:
            self._processing.put(key, entry, True)
            heap = self._processing_heap
            heapq.heappush(heap, (timestamp, self._next_seq(), key, namespace))
            if heap[0][0] == timestamp:
                self._schedule_processing(timestamp)

    def delete_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        self._processing.remove(self._backend.current_key, (timestamp, namespace))

    def has_processing_time_timers(self) -> bool:
        """Whether any key has a processing-time timer."""
        return not self._processing.is_empty()

    def clear_processing_time_timers(self) -> None:
        """Drop every key's processing-time timers (restored ones an operator that keeps
        its own timers has taken over)."""
        self._processing.clear_all()
        self._processing_heap.clear()

    def on_operator_processing_time(self, fire: Callable[[int], None]) -> None:
        """``fire(now)`` runs (on the task thread) each time processing-time timers fire,
        before the keys' timers: the operator's own timers, not kept per key nor in the
        backend, and scheduled with ``wake_at``."""
        self._fire_operator_timers = fire

    def wake_at(self, timestamp: int) -> None:
        """Processing-time timers fire once the clock reached ``timestamp`` (an operator
        timer of ``on_operator_processing_time``)."""
        self._schedule_processing(timestamp)

    @property
    def num_event_time_timers(self) -> int:
        return sum(1 for _ in self._event.entries())

    @property
    def num_processing_time_timers(self) -> int:
        return sum(1 for _ in self._processing.entries())

    # --- firing -------------------------------------------------------------------------

    def advance_watermark(self, watermark: int) -> None:
        """Fire every event-time timer at or before ``watermark``, in rounds (see the
        module docstring), each in timestamp order."""
        self.current_watermark = watermark
        self._fire_due(self._event_heap, self._event, watermark, self._triggerable.on_event_time)

    def _fire_due(
        self,
        heap: list[tuple[int, int, Any, Any]],
        table: NamespacedTable,
        until: int,
        fire: Callable[[int, Any, Any], None],
    ) -> None:
        backend = self._backend
        pop = heapq.heappop
        while heap and heap[0][0] <= until:
            round_end = self._seq  # timers registered from now on wait for the next round
            deferred = []
            due = []
            while heap and heap[0][0] <= until:
                entry = pop(heap)
                ts, seq, key, ns = entry
                if seq > round_end:
                    deferred.append(entry)
                    continue
                if table.get(key, (ts, ns)) is None:
                    continue  # deleted, or a duplicate entry of a re-registered timer
                table.remove(key, (ts, ns))
                due.append(entry)
            for entry in deferred:
                heapq.heappush(heap, entry)
            # The round's timers are taken out before any fires, as PyFlink hands them
            # to Python together: deleting one of them from on_timer does not stop it,
            # and registering it again makes it fire again in the next round.
            for ts, _, key, ns in due:
                backend.current_key = key
                fire(ts, key, ns)

    def _schedule_processing(self, timestamp: int) -> None:
        service = self._processing_time
        if service is None:
            return
        if self._scheduled_processing is not None and self._scheduled_processing <= timestamp:
            return
        self._scheduled_processing = timestamp
        service.schedule(timestamp, self._on_processing_timer_due)

    def _on_processing_timer_due(self) -> None:
        self._scheduled_processing = None
        self.fire_processing_timers(self._clock_ms())

    def fire_processing_timers(self, now: int) -> None:
        """Fire every processing-time timer at or before ``now`` (task thread)."""
        if self._fire_operator_timers is not None:
            self._fire_operator_timers(now)
        heap = self._processing_heap
        table = self._processing
        self._fire_due(heap, table, now, self._triggerable.on_processing_time)
        # Skip entries of deleted timers so the next wake-up is for a live one.
        while heap:
            ts, _, key, ns = heap[0]
            if table.get(key, (ts, ns)) is not None:
                self._schedule_processing(ts)
                break
            heapq.heappop(heap)
