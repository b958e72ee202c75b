"""The Dispatcher with a TestingJobManagerRunner factory: no JobMaster, no sockets."""

from __future__ import annotations

import threading

import pytest

from weir.core.errors import JobSubmissionError, LeaderLostError
from weir.core.highavailability import StandaloneHaServices
from weir.core.highavailability.services import JobGraphStore
from weir.core.ids import JobId
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.core.job_graph_codec import encode_job_graph
from weir.core.job_info import JobDetailsInfo
from weir.dispatcher.dispatcher import Dispatcher


class TestingJobManagerRunner:
    __test__ = False

    def __init__(self) -> None:
        self.address = "127.0.0.1:1"
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()


def _graph(job_id: str) -> bytes:
    vertex = JobVertex(
        "v", "v", 1, 128, (OperatorDescriptor("op", "op", OperatorKind.MAP, b""),), "default"
    )
    return encode_job_graph(JobGraph(job_id, "test", (vertex,), ()))


class TestDispatcher:
    def test_close_during_a_submission_closes_the_job_master_that_was_starting(self) -> None:
        starting, proceed = threading.Event(), threading.Event()
        runners: list[TestingJobManagerRunner] = []

        def factory(graph, on_terminated, on_changed):
            starting.set()
            proceed.wait(30)
            runner = TestingJobManagerRunner()
            runners.append(runner)
            return runner

        dispatcher = Dispatcher({}, StandaloneHaServices(), factory)
        dispatcher.start("127.0.0.1:1")  # leads at once: standalone
        errors: list[BaseException] = []

        def submit() -> None:
            try:
                dispatcher.submit_job(_graph("a" * 32))
            except JobSubmissionError as exc:
                errors.append(exc)

        submitter = threading.Thread(target=submit)
        submitter.start()
        assert starting.wait(30)
        closer = threading.Thread(target=dispatcher.close)
        closer.start()
        # close() waits for the submission whose JobMaster is starting...
        closer.join(0.2)
        assert closer.is_alive()
        proceed.set()
        submitter.join(30)
        closer.join(30)
        # ...which closes that JobMaster itself and says so.
        assert not closer.is_alive()
        assert [r.closed.is_set() for r in runners] == [True]
        assert errors and "shut down while job" in str(errors[0])

    def test_a_watcher_hears_of_the_job_master_starting_and_of_the_end(self) -> None:
        runner = TestingJobManagerRunner()
        ended: list[object] = []

        def factory(graph, on_terminated, on_changed):
            ended.append(on_terminated)
            return runner

        dispatcher = Dispatcher({}, StandaloneHaServices(), factory)
        dispatcher.start("127.0.0.1:1")  # leads at once: standalone
        job_id = dispatcher.submit_job(_graph("b" * 32))
        changes: list[int] = []
        watch = dispatcher.watch(job_id, lambda: changes.append(1))
        assert not watch.terminal
        assert dispatcher.watchers == 1
        dispatcher._archive_checkpoint_statistics = lambda job_id: None  # no JobMaster to ask
        ended[0](JobDetailsInfo(job_id, "test", "FINISHED"))  # type: ignore[operator]
        assert changes == [1]
        assert dispatcher.job_details(job_id).status_version == watch.version + 1
        dispatcher.unwatch(job_id, watch.token)
        assert dispatcher.watchers == 0
        dispatcher.close()

    def test_a_watcher_hears_of_each_change_of_the_running_job(self) -> None:
        """A restart (RUNNING -> RESTARTING -> RUNNING) is news to a client that shows
        restarts: each change the JobMaster reports wakes the job's watchers."""
        changed: list[object] = []

        def factory(graph, on_terminated, on_changed):
            changed.append(on_changed)
            return TestingJobManagerRunner()

        dispatcher = Dispatcher({}, StandaloneHaServices(), factory)
        dispatcher.start("127.0.0.1:1")  # leads at once: standalone
        job_id = dispatcher.submit_job(_graph("c" * 32))
        changes: list[int] = []
        watch = dispatcher.watch(job_id, lambda: changes.append(1))
        changed[0]()  # type: ignore[operator]
        changed[0]()  # type: ignore[operator]
        assert changes == [1, 1]
        with dispatcher._cond:
            assert dispatcher._jobs[job_id].version == watch.version + 2
        dispatcher.unwatch(job_id, watch.token)
        dispatcher.close()


@pytest.fixture(autouse=True)
def _no_leftover_threads():
    before = set(threading.enumerate())
    yield
    assert not [t for t in threading.enumerate() if t not in before and t.is_alive()]


class TestingJobGraphStore(JobGraphStore):
    """Job graphs in a dict, as a previous leader left them."""

    __test__ = False

    def __init__(self, graphs: dict[str, bytes]) -> None:
        self.graphs = graphs

    def put_job_graph(self, job_id: JobId, job_graph: bytes) -> None:
        self.graphs[job_id] = job_graph

    def remove_job_graph(self, job_id: JobId) -> None:
        self.graphs.pop(job_id, None)

    def recover_job_graph(self, job_id: JobId) -> bytes | None:
        return self.graphs.get(job_id)

    def get_job_ids(self) -> list[JobId]:
        return sorted(JobId(j) for j in self.graphs)


class TestRecovery:
    def test_a_recovered_job_whose_job_master_cannot_start_keeps_its_graph(self) -> None:
        """The previous leader's job is recovered, and its JobMaster fails to start for a
        passing reason (the HA store did not answer as it read the job's checkpoints): the
        graph stays for the next leadership; a new submission that fails leaves none."""
        store = TestingJobGraphStore({"b" * 32: _graph("b" * 32)})

        class Services(StandaloneHaServices):
            def get_job_graph_store(self) -> JobGraphStore:
                return store

        def factory(graph, on_terminated, on_changed):
            raise LeaderLostError("the completed checkpoints cannot be read from the API server")

        dispatcher = Dispatcher({}, Services(), factory)
        dispatcher.start("127.0.0.1:1")  # leads at once, and recovers
        assert store.get_job_ids() == ["b" * 32]
        with pytest.raises(JobSubmissionError, match="could not start a JobMaster"):
            dispatcher.submit_job(_graph("c" * 32))
        assert store.get_job_ids() == ["b" * 32]
        dispatcher.close()
