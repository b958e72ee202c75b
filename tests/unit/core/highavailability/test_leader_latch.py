"""ZooKeeperLeaderLatch's reaction to its connection, with a fake kazoo client (the states
are fired by the test) and a fake clock: a suspended connection gives leadership up at
once by default; tolerated, it does so once suspended for the session timeout by the
latch's own clock; either way the latch contends again once connected."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from weir.core.highavailability.zookeeper.leader_latch import ZooKeeperLeaderLatch

SESSION_TIMEOUT_MS = 10_000


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeElection:
    """kazoo's Election: ``run(func)`` calls ``func`` once the client lets this
    contender win (``may_lead``), unless cancelled first."""

    def __init__(self, client: FakeClient, number: int) -> None:
        self.lock = SimpleNamespace(node=f"latch-{number:010d}")
        self._client = client
        self._cancelled = threading.Event()

    def run(self, func: Callable[[], None]) -> None:
        while not self._client.may_lead.wait(0.05):  # polling interval of the fake
            if self._cancelled.is_set():
                return
        func()

    def cancel(self) -> None:
        self._cancelled.set()


class FakeClient:
    def __init__(self) -> None:
        self.connected = True
        self.may_lead = threading.Event()
        self._listeners: list[Callable[[str], Any]] = []
        self._elections = 0

    def add_listener(self, listener: Callable[[str], Any]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[str], Any]) -> None:
        self._listeners.remove(listener)

    def Election(self, _path: str, _identifier: str) -> FakeElection:  # kazoo's name
        self._elections += 1
        return FakeElection(self, self._elections)

    def fire(self, state: str) -> None:
        """A connection state, as kazoo's thread reports it."""
        for listener in list(self._listeners):
            listener(state)


class Recorder:
    def __init__(self) -> None:
        self.tokens: list[str | None] = []
        self.suspensions: list[bool] = []
        self.changed = threading.Condition()

    def on_leadership(self, token: str | None) -> None:
        with self.changed:
            self.tokens.append(token)
            self.changed.notify_all()

    def on_suspend(self, suspended: bool) -> None:
        with self.changed:
            self.suspensions.append(suspended)
            self.changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(condition, 30), f"timed out waiting for {what}"


@pytest.fixture
def client() -> FakeClient:
    return FakeClient()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_latch(
    client: FakeClient, clock: FakeClock
) -> Iterator[Callable[[bool], tuple[ZooKeeperLeaderLatch, Recorder]]]:
    latches: list[ZooKeeperLeaderLatch] = []

    def make(tolerate: bool) -> tuple[ZooKeeperLeaderLatch, Recorder]:
        latch = ZooKeeperLeaderLatch(
            client,
            "test",
            tolerate_suspended_connections=tolerate,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            clock=clock,
        )
        recorder = Recorder()
        latch.add_listener(recorder.on_leadership)
        latch.add_suspend_listener(recorder.on_suspend)
        latches.append(latch)
        latch.start()
        return latch, recorder

    yield make
    for latch in latches:
        latch.stop()


def lead(client: FakeClient, latch: ZooKeeperLeaderLatch) -> str:
    client.may_lead.set()
    token = latch.await_leadership(30)
    assert token is not None
    client.may_lead.clear()  # the next contention waits until the test lets it win
    return token


class TestLeaderLatch:
    def test_a_suspended_connection_gives_up_leadership_at_once_by_default(
        self,
        client: FakeClient,
        make_latch: Callable[[bool], tuple[ZooKeeperLeaderLatch, Recorder]],
        caplog: pytest.LogCaptureFixture,
    ):
        caplog.set_level(logging.INFO, logger="weir.core.highavailability")
        latch, recorder = make_latch(False)
        token = lead(client, latch)
        client.fire("SUSPENDED")  # the clock stands still: no timeout is involved
        assert latch.await_revocation(30)
        recorder.wait_for(lambda: recorder.tokens == [token, None], "the revocation")
        assert not latch.has_leadership(token)
        assert recorder.suspensions == []  # given up, not suspended
        [line] = [r for r in caplog.records if "SUSPENDED" in r.getMessage()]
        assert line.levelname == "ERROR"
        assert "giving up leadership" in line.getMessage()
        assert "tolerate-suspended-connections" in line.getMessage()

        # Back with the session intact: the latch contends again and may win again.
        client.fire("CONNECTED")
        again = lead(client, latch)
        assert again != token
        assert latch.leaderships == 2

    def test_a_tolerated_suspension_ends_leadership_after_the_session_timeout_by_its_clock(
        self,
        client: FakeClient,
        clock: FakeClock,
        make_latch: Callable[[bool], tuple[ZooKeeperLeaderLatch, Recorder]],
        caplog: pytest.LogCaptureFixture,
    ):
        caplog.set_level(logging.INFO, logger="weir.core.highavailability")
        latch, recorder = make_latch(True)
        token = lead(client, latch)
        client.fire("SUSPENDED")
        recorder.wait_for(lambda: recorder.suspensions == [True], "the leaders to suspend")
        assert not latch.has_leadership(token)  # nothing is committed while in doubt
        clock.now += SESSION_TIMEOUT_MS / 1000 - 0.001
        assert latch.token == token  # a frozen clock short of the timeout: still leading
        clock.now += 1
        assert latch.await_revocation(30)
        recorder.wait_for(lambda: recorder.tokens == [token, None], "the revocation")
        lines = [r.getMessage() for r in caplog.records if "giving up leadership" in r.getMessage()]
        assert len(lines) == 1
        assert f"session timeout ({SESSION_TIMEOUT_MS} ms by this master's clock)" in lines[0]

        client.fire("CONNECTED")  # a leadership given up does not resume
        assert recorder.suspensions == [True]
        assert lead(client, latch) != token

    def test_a_tolerated_suspension_shorter_than_the_session_timeout_resumes(
        self,
        client: FakeClient,
        clock: FakeClock,
        make_latch: Callable[[bool], tuple[ZooKeeperLeaderLatch, Recorder]],
    ):
        latch, recorder = make_latch(True)
        token = lead(client, latch)
        client.fire("SUSPENDED")
        clock.now += SESSION_TIMEOUT_MS / 2000
        client.fire("CONNECTED")
        recorder.wait_for(lambda: recorder.suspensions == [True, False], "the leaders to resume")
        assert latch.has_leadership(token)
        # The timeout is measured from each suspension, not from the first.
        clock.now += SESSION_TIMEOUT_MS / 1000
        client.fire("SUSPENDED")
        recorder.wait_for(lambda: len(recorder.suspensions) == 3, "the second suspension")
        assert latch.token == token
        assert recorder.tokens == [token]

    def test_a_lost_session_gives_up_leadership_whatever_the_setting(
        self,
        client: FakeClient,
        make_latch: Callable[[bool], tuple[ZooKeeperLeaderLatch, Recorder]],
    ):
        latch, recorder = make_latch(True)
        token = lead(client, latch)
        client.fire("SUSPENDED")
        client.fire("LOST")
        assert latch.await_revocation(30)
        client.fire("CONNECTED")  # a new session
        assert lead(client, latch) != token
        assert recorder.tokens[:2] == [token, None]
