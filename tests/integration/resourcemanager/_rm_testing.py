"""Test doubles and helpers for the ResourceManager suites."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from weir.core import rpc
from weir.core.security import SecurityConfig
from weir.proto import (
    common_pb2,
    jobmaster_pb2,
    jobmaster_pb2_grpc,
    resourcemanager_pb2,
    resourcemanager_pb2_grpc,
)


def wait_until(
    condition: Callable[[], Any], what: str | Callable[[], str], timeout: float = 60.0
) -> Any:
    """Poll ``condition`` until it is truthy; fail naming ``what`` after ``timeout`` s
    (a callable: what it says then, with what it saw)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout} s waiting for {said}")
        time.sleep(0.05)


class TestingJobMaster(jobmaster_pb2_grpc.JobMasterServicer):
    __test__ = False
    """Records what a JobMaster is told: lost TaskManagers, state updates, collected
    batches, and the slots the ResourceManager offers (taken unless ``refuse_offers``)."""

    def __init__(self) -> None:
        self.lost: list[tuple[str, str]] = []
        self.updates: list[tuple[str, str, str]] = []
        self.batches: list[bytes] = []
        self.offers: dict[str, list[Any]] = {}  # request id -> slots, in arrival order
        self.refuse_offers = False
        self._offered = threading.Condition()
        self._server = rpc.create_server(4, security=SecurityConfig())
        jobmaster_pb2_grpc.add_JobMasterServicer_to_server(self, self._server)
        self.address = rpc.bind(self._server, "127.0.0.1", 0)
        self._server.start()

    def NotifyTaskManagerLost(self, request: Any, context: Any) -> common_pb2.Ack:
        self.lost.append((request.resource_id, request.reason))
        return common_pb2.Ack(ok=True)

    def UpdateTaskExecutionState(self, request: Any, context: Any) -> common_pb2.Ack:
        self.updates.append((request.execution_attempt_id, request.state, request.failure_cause))
        return common_pb2.Ack(ok=True)

    def PushCollectBatch(self, request: Any, context: Any) -> Any:
        self.batches.append(request.batch)
        return jobmaster_pb2.PushCollectBatchResponse(accepted=True)

    def OfferSlots(self, request: Any, context: Any) -> Any:
        with self._offered:
            if self.refuse_offers:
                return jobmaster_pb2.OfferSlotsResponse(accepted=False, message="refused")
            self.offers[request.request_id] = list(request.slots)
            self._offered.notify_all()
        return jobmaster_pb2.OfferSlotsResponse(accepted=True)

    def await_offer(self, request_id: str, timeout: float = 120.0) -> list[Any]:
        with self._offered:
            if not self._offered.wait_for(lambda: request_id in self.offers, timeout):
                raise AssertionError(f"no slots offered for request {request_id} in {timeout} s")
            return self.offers[request_id]

    def close(self) -> None:
        self._server.stop(grace=0.5).wait()


class TestingResourceManager(resourcemanager_pb2_grpc.ResourceManagerServicer):
    __test__ = False
    """Accepts registrations and heartbeats; ``known`` decides the heartbeat answer."""

    def __init__(self, interval_ms: int = 100, timeout_ms: int = 2000) -> None:
        self.registrations: list[Any] = []
        self.heartbeats = 0
        self.known = True
        self.stale_slots: set[str] = set()  # answered as freed when a heartbeat reports them
        self.available: list[str] = []  # slots a NotifySlotAvailable said are free again
        self._interval_ms = interval_ms
        self._timeout_ms = timeout_ms
        self._lock = threading.Lock()
        # Its own thread names, so tests can tell its threads from the TaskExecutor's.
        self._server = grpc.server(futures.ThreadPoolExecutor(4, thread_name_prefix="testing-rm"))
        resourcemanager_pb2_grpc.add_ResourceManagerServicer_to_server(self, self._server)
        self.address = rpc.bind(self._server, "127.0.0.1", 0)
        self._server.start()

    def RegisterTaskExecutor(self, request: Any, context: Any) -> Any:
        with self._lock:
            self.registrations.append(request)
            self.known = True
        return resourcemanager_pb2.RegisterTaskExecutorResponse(
            accepted=True,
            heartbeat_interval_ms=self._interval_ms,
            heartbeat_timeout_ms=self._timeout_ms,
        )

    def Heartbeat(self, request: Any, context: Any) -> Any:
        with self._lock:
            self.heartbeats += 1
            stale = [a for a in request.allocated_slots if a in self.stale_slots]
            return resourcemanager_pb2.HeartbeatResponse(known=self.known, stale_slots=stale)

    def NotifySlotAvailable(self, request: Any, context: Any) -> Any:
        with self._lock:
            self.available.append(request.allocation_id)
        return common_pb2.Ack(ok=True)

    def close(self) -> None:
        self._server.stop(grace=0.5).wait()
