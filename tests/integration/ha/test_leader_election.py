"""Leader election, retrieval and fencing on a real ZooKeeper server: one leader among
contenders, its address published for retrievers, a successor when it goes, and a
deposed leader's writes refused by ZooKeeper itself."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from partition_proxy import PartitionProxy
from zookeeper_server import ZooKeeperServer

from weir.core.errors import LeaderLostError, PossibleInconsistentStateError
from weir.core.highavailability import CompletedCheckpointPointer, LeaderContender
from weir.core.highavailability.zookeeper import ZooKeeperHaServices
from weir.core.ids import JobId

JOB = JobId("cd" * 16)
TOLERATE = "high-availability.zookeeper.client.tolerate-suspended-connections"
# The longest session the test server allows (20 ticks of 500 ms): a healed cut is back
# well within it.
SESSION_TIMEOUT = "high-availability.zookeeper.client.session-timeout"


class RecordingContender(LeaderContender):
    def __init__(self, address: str) -> None:
        self._address = address
        self.tokens: list[str] = []
        self.revoked = threading.Event()
        self.suspensions: list[bool] = []
        self.on_suspend: Callable[[bool], None] = lambda _suspended: None

    @property
    def address(self) -> str:
        return self._address

    def grant_leadership(self, fencing_token: str) -> None:
        self.tokens.append(fencing_token)

    def revoke_leadership(self) -> None:
        self.revoked.set()

    def suspend_leadership(self, suspended: bool) -> None:
        self.on_suspend(suspended)
        self.suspensions.append(suspended)


class Watcher:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.seen: list[str | None] = []

    def __call__(self, address: str | None, _token: str | None) -> None:
        with self.cond:
            self.seen.append(address)
            self.cond.notify_all()

    def wait_for(self, address: str | None, timeout: float = 30) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.seen and self.seen[-1] == address, timeout), (
                f"leader never became {address}; saw {self.seen}"
            )


def lead(services: ZooKeeperHaServices, address: str) -> RecordingContender:
    contender = RecordingContender(address)
    services.get_dispatcher_leader_election().start(contender)
    return contender


class TestLeaderElection:
    def test_one_leader_its_address_retrieved_and_a_successor_when_it_goes(
        self, make_services: Callable[[str], ZooKeeperHaServices]
    ):
        first, second, client = make_services("a"), make_services("b"), make_services("client")
        first.start_contending()
        assert first.latch.await_leadership(30) is not None
        second.start_contending()
        a, b = lead(first, "127.0.0.1:1001"), lead(second, "127.0.0.1:1002")
        watcher = Watcher()
        client.get_dispatcher_leader_retriever().start(watcher)
        watcher.wait_for("127.0.0.1:1001")
        assert len(a.tokens) == 1
        assert b.tokens == []  # the standby waits

        first.close()  # the leader goes
        watcher.wait_for("127.0.0.1:1002")
        assert a.revoked.is_set()
        assert len(b.tokens) == 1
        assert b.tokens[0] != a.tokens[0]  # a new leader session, a new fencing token

    def test_a_deposed_leaders_writes_are_refused_by_zookeeper(
        self, make_services: Callable[[str], ZooKeeperHaServices]
    ):
        old, new = make_services("old"), make_services("new")
        old.start_contending()
        old_token = old.latch.await_leadership(30)
        assert old_token is not None
        store = old.create_completed_checkpoint_store(JOB, 3)
        store.add_checkpoint(CompletedCheckpointPointer(JOB, 1, "file:///c/chk-1", 1))
        # The old leader's latch node vanishes as when its session expires, while this
        # process still believes it leads (the SIGSTOP case without the wait).
        node = old.latch._node
        assert node is not None
        old.client.delete(node)
        new.start_contending()
        assert new.latch.await_leadership(30) is not None
        with pytest.raises(LeaderLostError, match="refused"):
            old.latch.guarded_transaction(old_token, lambda t: t.create("/split-brain", b""))
        assert new.client.exists("/split-brain") is None
        with pytest.raises(LeaderLostError):
            store.add_checkpoint(CompletedCheckpointPointer(JOB, 2, "file:///c/chk-2", 2))
        latest = new.create_completed_checkpoint_store(JOB, 3).get_latest()
        assert latest is not None
        assert latest.checkpoint_id == 1

    def test_a_writer_that_missed_an_update_is_refused(
        self, make_services: Callable[[str], ZooKeeperHaServices]
    ):
        services = make_services("one")
        services.start_contending()
        assert services.latch.await_leadership(30) is not None
        stale = services.create_completed_checkpoint_store(JOB, 3)
        fresh = services.create_completed_checkpoint_store(JOB, 3)
        fresh.add_checkpoint(CompletedCheckpointPointer(JOB, 5, "file:///c/chk-5", 5))
        with pytest.raises(LeaderLostError, match="changed under"):
            stale.add_checkpoint(CompletedCheckpointPointer(JOB, 4, "file:///c/chk-4", 4))
        assert [p.checkpoint_id for p in fresh.get_all()] == [5]


class TestLosingZooKeeper:
    """Each test stops a server of its own (stopping the shared one would disturb others),
    or cuts its own connection to the shared one through a proxy."""

    @pytest.fixture
    def own_server(self, tmp_path: Path) -> Iterator[ZooKeeperServer]:
        server = ZooKeeperServer(tmp_path / "zk")
        server.start()
        yield server
        server.stop()

    def _leader(
        self, quorum: str, ha_config: dict[str, str], *, tolerate: bool = False
    ) -> tuple[ZooKeeperHaServices, RecordingContender, str]:
        services = ZooKeeperHaServices(
            {
                **ha_config,
                "high-availability.zookeeper.quorum": quorum,
                TOLERATE: str(tolerate).lower(),
            },
            "solo",
        )
        services.start_contending()
        token = services.latch.await_leadership(30)
        assert token is not None
        return services, lead(services, "127.0.0.1:1003"), token

    def test_a_suspended_connection_gives_up_leadership_which_returns_with_the_quorum(
        self,
        own_server: ZooKeeperServer,
        ha_config: dict[str, str],
        caplog: pytest.LogCaptureFixture,
    ):
        """Flink's default: the leader cannot tell whether its session will expire, so it
        stops leading at once; once the quorum serves again it contends again (and, the
        only contender, leads again with a new token)."""
        caplog.set_level(logging.INFO, logger="weir.core.highavailability")
        services, contender, token = self._leader(own_server.address, ha_config)
        try:
            own_server.stop()
            wait(contender.revoked.is_set, "leadership to be given up")
            assert not services.latch.has_leadership(token)
            assert services.latch.token is None
            assert contender.suspensions == []
            own_server.start()  # same data
            wait(lambda: len(contender.tokens) == 2, "leadership again once connected")
            assert contender.tokens[1] != token
            lines = [r.getMessage() for r in caplog.records if "ZooKeeper" in r.getMessage()]
            assert sum("SUSPENDED: giving up leadership" in line for line in lines) == 1, lines
            assert not any("leaders resume" in line for line in lines), lines
        finally:
            services.close()

    def test_a_tolerated_suspension_gives_up_leadership_after_the_session_timeout(
        self,
        own_server: ZooKeeperServer,
        ha_config: dict[str, str],
        caplog: pytest.LogCaptureFixture,
    ):
        """The quorum stays away: kazoo never reports the session LOST (it would have to
        reconnect first), so the latch gives up by its own clock."""
        caplog.set_level(logging.INFO, logger="weir.core.highavailability")
        services, contender, token = self._leader(own_server.address, ha_config, tolerate=True)
        try:
            own_server.stop()
            wait(lambda: contender.suspensions == [True], "leaders to suspend")
            wait(contender.revoked.is_set, "leadership to be given up without ZooKeeper")
            assert not services.latch.has_leadership(token)
            lines = [r.getMessage() for r in caplog.records]
            assert sum("SUSPENDED for the session timeout" in line for line in lines) == 1
            own_server.start()
            wait(lambda: len(contender.tokens) == 2, "leadership again once connected")
        finally:
            services.close()

    def test_a_tolerated_suspension_resumes_when_the_connection_is_back_in_time(
        self, zookeeper: object, ha_config: dict[str, str], caplog: pytest.LogCaptureFixture
    ):
        """The network between the leader and ZooKeeper fails and heals within the
        session timeout (a proxy drops the traffic, then lets it through again)."""
        caplog.set_level(logging.INFO, logger="weir.core.highavailability")
        host, port = zookeeper.address.rsplit(":", 1)  # type: ignore[attr-defined]
        with PartitionProxy(host, int(port)) as proxy:
            services, contender, token = self._leader(
                proxy.address, {**ha_config, SESSION_TIMEOUT: "10 s"}, tolerate=True
            )
            try:
                proxy.partition()
                wait(lambda: contender.suspensions == [True], "leaders to suspend")
                assert not services.latch.has_leadership(token)  # nothing is committed now
                proxy.heal()  # the reconnection under way gets through: the session lives
                wait(lambda: contender.suspensions == [True, False], "leaders to resume")
                assert services.latch.has_leadership(token)
                assert not contender.revoked.is_set()
                lines = [r.getMessage() for r in caplog.records if "ZooKeeper" in r.getMessage()]
                assert sum("SUSPENDED" in line for line in lines) == 1
                assert sum("resume" in line for line in lines) == 1
            finally:
                services.close()

    def test_calls_made_while_cut_off_fail_instead_of_waiting_for_the_connection(
        self, zookeeper: object, ha_config: dict[str, str]
    ):
        """A fenced write whose answer the cut swallowed may or may not be applied: it says
        so. And kazoo keeps a request made while the connection is down until it is back; a
        master cut off for minutes must not wait that long (its JobMasters could not stop),
        so a read then fails at once."""
        host, port = zookeeper.address.rsplit(":", 1)  # type: ignore[attr-defined]
        with PartitionProxy(host, int(port)) as proxy:
            services, _contender, token = self._leader(
                proxy.address, {**ha_config, SESSION_TIMEOUT: "10 s"}, tolerate=True
            )
            counter = services.create_checkpoint_id_counter(JOB)
            outcomes: list[BaseException | None] = []

            def read() -> None:
                try:
                    counter.get()
                    outcomes.append(None)
                except LeaderLostError as exc:
                    outcomes.append(exc)

            try:
                proxy.partition()
                # Sent at once, seconds before the client can notice the silence.
                with pytest.raises(PossibleInconsistentStateError, match="may or may not"):
                    services.latch.guarded_transaction(token, lambda t: t.create("/maybe", b""))
                wait(lambda: not services.client.connected, "the client to notice the cut")
                reader = threading.Thread(target=read, daemon=True)
                reader.start()
                reader.join(60)
                assert outcomes, "a read made while cut off waited for the connection"
                assert isinstance(outcomes[0], LeaderLostError), outcomes
            finally:
                proxy.heal()
                services.close()

    @pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
    def test_a_registration_whose_answer_was_lost_is_settled_from_zookeeper(
        self, zookeeper: object, ha_config: dict[str, str], applied: bool
    ):
        """The connection drops while checkpoint 2 is being registered: ZooKeeper applied
        the write and its answer was lost, or the request never reached it. The store
        cannot tell, and says so. Once the connection is back (the session intact, a
        tolerated suspension), it reads what ZooKeeper holds: a restore then starts from
        what is registered, and the next registration goes on from it rather than taking
        the store's own write for another leader's."""
        host, port = zookeeper.address.rsplit(":", 1)  # type: ignore[attr-defined]
        with PartitionProxy(host, int(port)) as proxy:
            services, contender, _token = self._leader(
                proxy.address, {**ha_config, SESSION_TIMEOUT: "10 s"}, tolerate=True
            )
            try:
                store = services.create_completed_checkpoint_store(JOB, 1)
                first = CompletedCheckpointPointer(JOB, 1, "file:///c/chk-1", 1)
                second = CompletedCheckpointPointer(JOB, 2, "file:///c/chk-2", 2)
                third = CompletedCheckpointPointer(JOB, 3, "file:///c/chk-3", 3)
                assert store.add_checkpoint(first) == []
                if applied:
                    proxy.withhold_replies()
                else:
                    proxy.partition()
                with pytest.raises(PossibleInconsistentStateError, match="may or may not"):
                    store.add_checkpoint(second)
                if not applied:
                    proxy.sever()  # the request waiting in the cut is dropped
                proxy.heal()
                wait(lambda: contender.suspensions == [True, False], "leaders to resume")
                registered = services.create_completed_checkpoint_store(JOB, 1).get_all()
                assert registered == [second if applied else first]
                store.settle()
                assert store.get_all() == registered
                # The next one registers, and the one it subsumes, and what the lost write
                # dropped or would have registered, are handed back for deletion.
                subsumed = store.add_checkpoint(third)
                assert sorted(subsumed, key=lambda p: p.checkpoint_id) == [first, second]
                assert store.get_all() == [third]
                assert services.create_completed_checkpoint_store(JOB, 1).get_all() == [third]
            finally:
                proxy.heal()
                services.close()

    def test_a_suspend_hook_may_wait_for_a_thread_that_waits_for_zookeeper(
        self, zookeeper: object, ha_config: dict[str, str]
    ):
        """The checkpoint coordinator's case: its suspend hook takes the coordinator's
        lock, which another thread may hold across a ZooKeeper call made while the
        connection was away. That call's reply comes in on kazoo's thread, so the hooks
        must run elsewhere, or the resumption deadlocks."""
        host, port = zookeeper.address.rsplit(":", 1)  # type: ignore[attr-defined]
        with PartitionProxy(host, int(port)) as proxy:
            services, contender, _token = self._leader(
                proxy.address, {**ha_config, SESSION_TIMEOUT: "10 s"}, tolerate=True
            )
            lock = threading.Lock()

            def hook(_suspended: bool) -> None:
                with lock:
                    pass

            contender.on_suspend = hook
            read: list[object] = []

            def read_while_away() -> None:
                with lock:
                    read.append(services.client.exists("/leader"))  # sent once reconnected

            try:
                proxy.partition()
                wait(lambda: contender.suspensions == [True], "leaders to suspend")
                reader = threading.Thread(target=read_while_away, daemon=True)
                reader.start()
                wait(lock.locked, "the reader to hold the lock")
                proxy.heal()
                wait(lambda: contender.suspensions == [True, False], "leaders to resume")
                reader.join(30)
                assert read and read[0] is not None
            finally:
                services.close()

    def test_lost_session_gives_up_leadership_and_leads_again_with_a_new_token(
        self,
        own_server: ZooKeeperServer,
        ha_config: dict[str, str],
        caplog: pytest.LogCaptureFixture,
    ):
        caplog.set_level(logging.INFO, logger="weir.core.highavailability")
        services, contender, token = self._leader(own_server.address, ha_config)
        try:
            # ZooKeeper expires the session: another client attaches to it and closes it,
            # the server's way of ending a session (what a pause past the timeout causes).
            from kazoo.client import KazooClient

            thief = KazooClient(own_server.address, client_id=services.client.client_id)
            thief.start(timeout=30)
            thief.stop()
            thief.close()
            wait(contender.revoked.is_set, "leadership to be given up")
            wait(lambda: len(contender.tokens) == 2, "leadership again after reconnecting")
            assert contender.tokens[1] != token
            assert not services.latch.has_leadership(token)
            lost = [r for r in caplog.records if "session LOST" in r.getMessage()]
            assert len(lost) == 1
            assert lost[0].levelname == "ERROR"
            # The reconnection is a new session: it says so, once, and nothing "resumes".
            lines = [r.getMessage() for r in caplog.records]
            assert sum("with a new session" in line for line in lines) == 1, lines
            assert not any("leaders resume" in line for line in lines), lines
            assert contender.suspensions in ([], [True]), contender.suspensions
        finally:
            services.close()


def wait(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)  # polling interval; the condition decides
