"""A test-only executor that records submitted JobGraphs instead of running them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from weir.core.completable_future import CompletableFuture
from weir.core.executor import JobExecutionResult, JobID, register_executor
from weir.core.job_client import JobClient
from weir.core.job_graph import JobGraph
from weir.core.job_status import JobStatus


class TestingCollectIterator:
    def __init__(self, values: list[Any]) -> None:
        self._values = iter(values)
        self.closed = False

    def __iter__(self) -> TestingCollectIterator:
        return self

    def __next__(self) -> Any:
        return next(self._values)

    def close(self) -> None:
        self.closed = True


class TestingJobClient(JobClient):
    def __init__(self, job_graph: JobGraph, collected: list[Any]) -> None:
        self.job_graph = job_graph
        self.collected = collected
        self.iterators: list[TestingCollectIterator] = []
        self.collect_operator_id: str | None = None

    def get_job_id(self) -> JobID:
        return JobID(self.job_graph.job_id)

    def get_job_status(self) -> CompletableFuture:
        return CompletableFuture.completed(JobStatus.FINISHED)

    def cancel(self) -> CompletableFuture:
        return CompletableFuture.completed(None)

    def get_job_execution_result(self) -> CompletableFuture:
        return CompletableFuture.completed(JobExecutionResult(self.job_graph.job_id, 0))

    def collect(self, operator_id: str) -> TestingCollectIterator:
        self.collect_operator_id = operator_id
        iterator = TestingCollectIterator(self.collected)
        self.iterators.append(iterator)
        return iterator


class TestingExecutor:
    def __init__(self, collected: list[Any] | None = None) -> None:
        self.collected = collected or []
        self.clients: list[TestingJobClient] = []

    @property
    def job_graphs(self) -> list[JobGraph]:
        return [c.job_graph for c in self.clients]

    def submit(self, job_graph: JobGraph) -> TestingJobClient:
        client = TestingJobClient(job_graph, self.collected)
        self.clients.append(client)
        return client


@pytest.fixture
def executor() -> Iterator[TestingExecutor]:
    testing = TestingExecutor()
    register_executor(testing)
    yield testing
    register_executor(None)
