"""Many clients waiting at once on one cluster: a result wait is a coroutine on the
Dispatcher's loop, not a server thread, so a hundred attached clients neither starve the
Dispatcher nor each other, and every one gets its result."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, WatermarkStrategy
from weir.core.errors import WeirError
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

CLIENTS = 100


def _await(condition, what, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)  # polling interval; the condition decides


def _threads_parked_in_result_waits() -> int:
    """Threads of this process (the MiniCluster's) inside a WaitForJobResult call."""
    parked = 0
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code.co_name == "WaitForJobResult":
                parked += 1
                break
            frame = frame.f_back
    return parked


def _tiny_job(n: int) -> StreamExecutionEnvironment:
    config = Configuration()
    # They queue behind each other for the cluster's slots; none may give up.
    config.set_string("slot.request.timeout", "10 min")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(1)
    env.from_collection([n]).map(lambda x: x + 1).add_sink(lambda x: None)
    return env


@contextlib.contextmanager
def _cancelled_at_the_end(gateway: DispatcherGateway, client) -> Iterator[None]:
    """Cancel the job however the test ends: a blocker left running would hold the shared
    cluster's slots from the tests after this one."""
    try:
        yield
    finally:
        with contextlib.suppress(WeirError):
            gateway.cancel_job(str(client.get_job_id()))


@pytest.mark.long  # a hundred clients: a soak
def test_a_hundred_attached_clients_all_get_their_results(cluster):
    # A job holding every slot until cancelled: the hundred jobs wait behind it, and
    # their clients wait for their results all at once.
    blocker_env = StreamExecutionEnvironment.get_execution_environment()
    blocker_env.set_parallelism(int(cluster.config["resourcemanager.taskmanager.max"]))
    blocker_env.from_source(
        NumberSequenceSource(0, 10**12), WatermarkStrategy.no_watermarks(), "endless"
    ).add_sink(lambda x: None)
    blocker = blocker_env.execute_async("blocker")
    with DispatcherGateway(cluster.address) as gateway, _cancelled_at_the_end(gateway, blocker):
        _await(
            lambda: (
                gateway.job_details(str(blocker.get_job_id())).status == "RUNNING"
                and all(
                    t.state == "RUNNING"
                    for t in gateway.job_details(str(blocker.get_job_id())).tasks
                )
            ),
            "the blocker to run",
        )
        clients = [_tiny_job(n).execute_async(f"tiny-{n}") for n in range(CLIENTS)]
        with ThreadPoolExecutor(CLIENTS) as waiters:
            results = [
                waiters.submit(lambda c=c: c.get_job_execution_result().result()) for c in clients
            ]
            dispatcher = cluster.dispatcher
            _await(
                lambda: (
                    getattr(dispatcher, "watchers", 0) >= CLIENTS
                    or _threads_parked_in_result_waits() > 0
                ),
                "the clients to wait",
            )
            assert _threads_parked_in_result_waits() == 0
            # The Dispatcher answers the other calls while they wait.
            assert len(gateway.list_jobs()) == CLIENTS + 1
            gateway.cancel_job(str(blocker.get_job_id()))
            done = [r.result(timeout=600) for r in results]
        assert len(done) == CLIENTS
        statuses = {j.job_id: j.status for j in gateway.list_jobs(include_terminated=True)}
        assert all(statuses[str(c.get_job_id())] == "FINISHED" for c in clients)
