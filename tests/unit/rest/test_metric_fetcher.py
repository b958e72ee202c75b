"""The REST endpoint's metric store: every TaskManager asked at once, at most once per
update interval, one fetch outstanding each; a TaskManager that does not answer is served
from its last values, marked stale, and not waited for again until it answers."""

from __future__ import annotations

from collections.abc import Callable, Collection
from concurrent.futures import Future
from dataclasses import dataclass

import pytest

from weir.core.errors import RemoteError
from weir.core.metrics import MetricSample
from weir.rest.metric_fetcher import FetchedMetrics, MetricFetcher, TaskManagerMetrics

INTERVAL_S = 1.0


@dataclass(frozen=True)
class _Info:
    resource_id: str


A, B, C = _Info("a"), _Info("b"), _Info("c")


def values(n: float) -> TaskManagerMetrics:
    return TaskManagerMetrics((MetricSample(("taskmanager",), "n", {}, "gauge", n),))


class Requests:
    """Fetches the test completes by hand."""

    def __init__(self) -> None:
        self.made: list[tuple[str, Future[TaskManagerMetrics]]] = []

    def __call__(self, info: _Info) -> Future[TaskManagerMetrics]:
        future: Future[TaskManagerMetrics] = Future()
        self.made.append((info.resource_id, future))
        return future

    def of(self, resource_id: str) -> list[Future[TaskManagerMetrics]]:
        return [f for r, f in self.made if r == resource_id]

    def answer(self, resource_id: str, metrics: TaskManagerMetrics) -> None:
        self.of(resource_id)[-1].set_result(metrics)

    def fail(self, resource_id: str) -> None:
        self.of(resource_id)[-1].set_exception(RemoteError("GetMetrics failed (UNAVAILABLE)"))


class Waits:
    """Records what each call waited for; ``during`` plays what lands while it waits."""

    def __init__(self) -> None:
        self.calls: list[set[Future[TaskManagerMetrics]]] = []
        self.during: Callable[[], None] = lambda: None

    def __call__(self, pending: Collection[Future[TaskManagerMetrics]], timeout_s: float) -> None:
        self.calls.append(set(pending))
        self.during()
        self.during = lambda: None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def requests() -> Requests:
    return Requests()


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fetcher(requests: Requests, waits: Waits, clock: Clock) -> MetricFetcher:
    return MetricFetcher(
        requests, update_interval_s=INTERVAL_S, wait_s=1.0, clock=clock, wait=waits
    )


def answer_all(requests: Requests, n: float) -> Callable[[], None]:
    def play() -> None:
        for _, future in requests.made:
            if not future.done():
                future.set_result(values(n))

    return play


class TestMetricFetcher:
    def test_asks_every_task_manager_before_waiting_for_any(
        self, fetcher: MetricFetcher, requests: Requests, waits: Waits
    ) -> None:
        waits.during = answer_all(requests, 1)
        got = fetcher.metrics([A, B, C])
        assert [r for r, _ in requests.made] == ["a", "b", "c"]
        assert waits.calls == [{f for _, f in requests.made}]
        assert got == dict.fromkeys("abc", FetchedMetrics(values(1), stale=False))

    def test_values_are_reused_within_the_update_interval(
        self, fetcher: MetricFetcher, requests: Requests, waits: Waits, clock: Clock
    ) -> None:
        waits.during = answer_all(requests, 1)
        fetcher.metrics([A])
        clock.now += INTERVAL_S / 2
        assert fetcher.metrics([A]) == {"a": FetchedMetrics(values(1), stale=False)}
        assert len(requests.made) == 1
        assert len(waits.calls) == 1
        clock.now += INTERVAL_S
        waits.during = answer_all(requests, 2)
        assert fetcher.metrics([A]) == {"a": FetchedMetrics(values(2), stale=False)}
        assert len(requests.made) == 2

    def test_one_that_does_not_answer_in_time_is_served_stale_and_not_awaited_again(
        self, fetcher: MetricFetcher, requests: Requests, waits: Waits, clock: Clock
    ) -> None:
        waits.during = answer_all(requests, 1)
        fetcher.metrics([A, B])
        # A stops answering: one wait, then its last values, marked stale.
        clock.now += 2 * INTERVAL_S
        waits.during = lambda: requests.answer("b", values(2))
        got = fetcher.metrics([A, B])
        assert got["a"] == FetchedMetrics(values(1), stale=True)
        assert got["b"] == FetchedMetrics(values(2), stale=False)
        # Later calls neither ask A again (its fetch is outstanding) nor wait for it.
        for _ in range(5):
            clock.now += 2 * INTERVAL_S
            waits.during = lambda: requests.answer("b", values(3))
            got = fetcher.metrics([A, B])
            assert got["a"] == FetchedMetrics(values(1), stale=True)
            assert got["b"] == FetchedMetrics(values(3), stale=False)
            assert requests.of("a")[-1] not in waits.calls[-1]
        assert len(requests.of("a")) == 2
        assert len(requests.of("b")) == 7
        # Its fetch lands at last: its values are fresh, and it is awaited again.
        requests.answer("a", values(4))
        waits.calls.clear()
        waits.during = answer_all(requests, 5)
        assert fetcher.metrics([A])["a"] == FetchedMetrics(values(5), stale=False)
        assert waits.calls == [{requests.of("a")[-1]}]
        assert len(requests.of("a")) == 3

    def test_a_failed_fetch_is_retried_after_the_update_interval_not_before(
        self, fetcher: MetricFetcher, requests: Requests, waits: Waits, clock: Clock
    ) -> None:
        waits.during = lambda: requests.fail("a")
        assert fetcher.metrics([A]) == {"a": FetchedMetrics(None, stale=True)}
        clock.now += INTERVAL_S / 2
        assert fetcher.metrics([A]) == {"a": FetchedMetrics(None, stale=True)}
        assert len(requests.made) == 1
        clock.now += INTERVAL_S
        calls = len(waits.calls)
        assert fetcher.metrics([A]) == {"a": FetchedMetrics(None, stale=True)}
        assert len(requests.made) == 2
        assert len(waits.calls) == calls  # not answering: asked, but not waited for
        requests.answer("a", values(1))
        assert fetcher.metrics([A]) == {"a": FetchedMetrics(values(1), stale=False)}

    def test_one_that_cannot_even_be_asked_reads_as_stale(self, waits: Waits, clock: Clock) -> None:
        def unreachable(info: _Info) -> Future[TaskManagerMetrics]:
            raise RemoteError(f"no channel to {info.resource_id}")

        fetcher = MetricFetcher(
            unreachable, update_interval_s=INTERVAL_S, wait_s=1.0, clock=clock, wait=waits
        )
        assert fetcher.metrics([A]) == {"a": FetchedMetrics(None, stale=True)}

    def test_task_managers_that_left_the_list_are_forgotten(
        self, fetcher: MetricFetcher, requests: Requests, waits: Waits, clock: Clock
    ) -> None:
        waits.during = lambda: requests.fail("a")
        fetcher.metrics([A])
        assert fetcher.metrics([B]).keys() == {"b"}
        # Back under the same id (a new TaskManager): asked at once and awaited.
        waits.during = answer_all(requests, 7)
        assert fetcher.metrics([A]) == {"a": FetchedMetrics(values(7), stale=False)}
        assert len(requests.of("a")) == 2
