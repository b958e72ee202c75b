"""A test-only executor that records submitted JobGraphs instead of running them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from weir.core.executor import JobExecutionResult, register_executor
from weir.core.job_graph import JobGraph


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


class TestingJobClient:
    def __init__(self, job_graph: JobGraph, collected: list[Any]) -> None:
        self.job_graph = job_graph
        self.collected = collected
        self.iterators: list[TestingCollectIterator] = []
        self.collect_operator_id: str | None = None

    def get_job_id(self) -> str:
        return self.job_graph.job_id

    def get_job_status(self) -> str:
        return "FINISHED"

    def cancel(self) -> None:
        pass

    def get_job_execution_result(self) -> JobExecutionResult:
        return JobExecutionResult(self.job_graph.job_id, 0)

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
