"""CompletableFuture and JobStatus, as PyFlink's JobClient hands them out."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest

from weir.common import CompletableFuture, JobID, JobStatus


def test_a_completed_future_is_done_with_its_value() -> None:
    future = CompletableFuture.completed(7)
    assert future.done() and not future.cancelled()
    assert future.result() == 7
    assert future.exception() is None
    assert not future.cancel() and not future.cancelled()


def test_a_computed_future_waits_once_and_keeps_its_value() -> None:
    calls: list[int] = []
    release = threading.Event()

    def compute() -> str:
        release.wait(30)
        calls.append(1)
        return "done"

    future = CompletableFuture(compute, is_done=release.is_set)
    assert not future.done()
    assert future.exception() is None  # never waits
    release.set()
    assert future.done()
    assert future.result() == "done"
    assert future.result() == "done"
    assert calls == [1]


def test_a_failed_computation_is_raised_by_every_result_and_shown_by_exception() -> None:
    def fail() -> None:
        raise RuntimeError("the job failed")

    future = CompletableFuture(fail, is_done=lambda: True)
    assert isinstance(future.exception(), RuntimeError)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="the job failed"):
            future.result()


def test_a_cancelled_future_has_no_result() -> None:
    future = CompletableFuture(lambda: 1)
    assert future.cancel() and future.cancelled() and future.done()
    with pytest.raises(CancelledError):
        future.result()


def test_job_status_terminal_states_are_flinks() -> None:
    globally = {s for s in JobStatus if s.is_globally_terminal_state()}
    assert globally == {JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED}
    assert {s for s in JobStatus if s.is_terminal_state()} == globally | {JobStatus.SUSPENDED}
    assert JobStatus.RUNNING.value == 1  # PyFlink's numbering


def test_job_ids_compare_with_their_hex_string() -> None:
    job_id = JobID("ab" * 16)
    assert str(job_id) == "ab" * 16
    assert job_id == JobID("ab" * 16) == "ab" * 16
    assert len({job_id, JobID("ab" * 16)}) == 1
