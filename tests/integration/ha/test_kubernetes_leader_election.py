"""Leader election, retrieval and fencing of Kubernetes high availability on a real API
server (etcd and kube-apiserver), as a master's ServiceAccount: one leader among
contenders racing for the lease by compare-and-swap, its address published for
retrievers, a successor when it goes; a deposed leader's writes refused by the API server
itself; a leader paused past its lease that, resumed, deletes, writes and answers
nothing; and an API server restarted under a leader and a standby, after which nothing is
lost and one leader remains."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from kubernetes_api_server import NAMESPACE, KubeApiServer

from weir.core.errors import ConfigurationError, LeaderLostError, PossibleInconsistentStateError
from weir.core.highavailability import CompletedCheckpointPointer, LeaderContender
from weir.core.highavailability.kubernetes import KubernetesHaServices
from weir.core.highavailability.kubernetes import services as ha_services_module
from weir.core.highavailability.kubernetes.api_client import (
    ConfigMap,
    KubernetesApiClient,
    KubernetesUnavailableError,
)
from weir.core.highavailability.kubernetes.connection import resolve_connection
from weir.core.highavailability.kubernetes.leader_elector import (
    LEADER_ANNOTATION,
    LeaderRecord,
    holder_of,
)
from weir.core.ids import JobId

JOB = JobId("ef" * 16)
CONTENDER = Path(__file__).parent / "kubernetes_contender.py"
CONTENDED_JOB = JobId("c0" * 16)
GRAPH = b"the job graph the first leader stored"  # kubernetes_contender.py's
# Short leases keep the takeovers quick; the renew deadline is below the lease duration
# and several retry periods long, as in production (15 s, 15 s and 5 s by default).
FAST = {
    "high-availability.kubernetes.leader-election.lease-duration": "3 s",
    "high-availability.kubernetes.leader-election.renew-deadline": "2 s",
    "high-availability.kubernetes.leader-election.retry-period": "250 ms",
}
# A lease that outlives any stall of a loaded machine, for a leader that must keep it.
SLOW = {
    "high-availability.kubernetes.leader-election.lease-duration": "60 s",
    "high-availability.kubernetes.leader-election.renew-deadline": "45 s",
    "high-availability.kubernetes.leader-election.retry-period": "250 ms",
}


class RecordingContender(LeaderContender):
    def __init__(self, address: str) -> None:
        self._address = address
        self.tokens: list[str] = []
        self.revoked = threading.Event()

    @property
    def address(self) -> str:
        return self._address

    def grant_leadership(self, fencing_token: str) -> None:
        self.tokens.append(fencing_token)

    def revoke_leadership(self) -> None:
        self.revoked.set()


class TestingAnswerLosingClient(KubernetesApiClient):
    """A client of the real API server whose next ConfigMap replacement on the thread that
    asks for it (not the elector's renewals) loses its answer, after the server applied
    it or before the request went out."""

    __test__ = False  # a test double, not a test class
    _lose: tuple[int, bool] | None = None

    def lose_next_answer(self, *, applied: bool) -> None:
        self._lose = (threading.get_ident(), applied)

    def replace_config_map(
        self, config_map: ConfigMap, timeout_s: float | None = None
    ) -> ConfigMap:
        lose = self._lose
        if lose is None or lose[0] != threading.get_ident():
            return super().replace_config_map(config_map, timeout_s)
        if lose[1]:
            # A conflict (a renewal came first) raises here, and the next attempt loses it.
            super().replace_config_map(config_map, timeout_s)
        self._lose = None
        msg = "the connection to the API server broke before its answer came"
        raise KubernetesUnavailableError(msg, maybe_applied=True)


class Watcher:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.seen: list[str | None] = []

    def __call__(self, address: str | None, _token: str | None) -> None:
        with self.cond:
            self.seen.append(address)
            self.cond.notify_all()

    def wait_for(self, address: str | None, timeout: float = 60) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.seen and self.seen[-1] == address, timeout), (
                f"leader never became {address}; saw {self.seen}"
            )


def wait(condition: Callable[[], Any], what: str, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)  # polling interval; the condition decides
    return value


@pytest.fixture
def k8s_config(kube_api_server: KubeApiServer, tmp_path: Path) -> dict[str, str]:
    return kube_api_server.ha_config(
        f"election-{uuid.uuid4().hex[:8]}", f"file://{tmp_path}/ha", **FAST
    )


@pytest.fixture
def make_services(k8s_config: dict[str, str]) -> Iterator[Callable[..., KubernetesHaServices]]:
    created: list[KubernetesHaServices] = []

    def make(identifier: str, config: dict[str, str] | None = None) -> KubernetesHaServices:
        services = KubernetesHaServices(config or k8s_config, identifier)
        created.append(services)
        return services

    yield make
    for services in created:
        services.close()


def lead(services: KubernetesHaServices, address: str) -> RecordingContender:
    contender = RecordingContender(address)
    services.get_dispatcher_leader_election().start(contender)
    return contender


def lease(api: KubeApiServer, name: str) -> LeaderRecord | None:
    obj = api.admin("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/{name}")
    return LeaderRecord.decode(
        ((obj.get("metadata") or {}).get("annotations") or {}).get(LEADER_ANNOTATION)
    )


class TestLeaderElection:
    def test_one_leader_its_address_retrieved_and_a_successor_when_it_goes(
        self, make_services: Callable[..., KubernetesHaServices]
    ):
        first, second, client = make_services("a"), make_services("b"), make_services("client")
        first.start_contending()
        assert first.latch.await_leadership(60) is not None
        second.start_contending()
        a, b = lead(first, "127.0.0.1:1001"), lead(second, "127.0.0.1:1002")
        watcher = Watcher()
        client.get_dispatcher_leader_retriever().start(watcher)
        watcher.wait_for("127.0.0.1:1001")
        assert len(a.tokens) == 1
        assert b.tokens == []  # the standby waits

        first.close()  # the leader goes, releasing its lease
        watcher.wait_for("127.0.0.1:1002")
        assert a.revoked.is_set()
        assert len(b.tokens) == 1
        assert b.tokens[0] != a.tokens[0]  # a new leader session, a new fencing token

    def test_contenders_racing_for_an_expired_lease_elect_exactly_one(
        self,
        kube_api_server: KubeApiServer,
        k8s_config: dict[str, str],
        make_services: Callable[..., KubernetesHaServices],
    ):
        """A lease left by a leader that died: four standbys see it expire and try to take
        it with the same resourceVersion; the API server lets one compare-and-swap through."""
        name = f"{k8s_config['kubernetes.cluster-id']}-cluster-config-map"
        dead = LeaderRecord(
            "dead-leader", 1, "2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:00.000000Z", 4
        )
        kube_api_server.admin(
            "POST",
            f"/api/v1/namespaces/{NAMESPACE}/configmaps",
            ConfigMap(NAMESPACE, name, annotations={LEADER_ANNOTATION: dead.encode()}).to_json(),
        )
        contenders = [make_services(f"racer-{i}") for i in range(4)]
        for services in contenders:
            services.start_contending()
        winner = wait(lambda: [s for s in contenders if s.latch.token is not None], "a leader")
        assert len(winner) == 1
        token = winner[0].latch.token
        record = lease(kube_api_server, name)
        assert record is not None
        assert record.holder_identity == token
        assert record.leader_transitions == dead.leader_transitions + 1
        # Two renewals later every standby has tried again and again: still one leader.
        renewed = record.renew_time
        wait(lambda: (r := lease(kube_api_server, name)) and r.renew_time != renewed, "a renewal")
        renewed = lease(kube_api_server, name).renew_time  # type: ignore[union-attr]
        wait(lambda: (r := lease(kube_api_server, name)) and r.renew_time != renewed, "another")
        assert sum(s.latch.leaderships for s in contenders) == 1
        assert [s.latch.has_leadership(token) for s in contenders].count(True) == 1  # type: ignore[arg-type]

    def test_a_deposed_leaders_write_is_refused_by_the_api_server(
        self, kube_api_server: KubeApiServer, make_services: Callable[..., KubernetesHaServices]
    ):
        """The leader reads the ConfigMap and, before its write goes out, a successor takes
        the lease (as when the leader was paused just there, past its lease): its own view
        still says it leads, but the compare-and-swap fails and the lease names another."""
        old = make_services("old")
        old.start_contending()
        token = old.latch.await_leadership(60)
        assert token is not None
        store = old.create_completed_checkpoint_store(JOB, 3)
        store.add_checkpoint(CompletedCheckpointPointer(JOB, 1, "file:///c/chk-1", 1))
        name = old.config_map.name
        path = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{name}"

        def successor_takes_over_meanwhile(data: dict[str, str]) -> dict[str, str]:
            obj = kube_api_server.admin("GET", path)
            record = LeaderRecord.decode(obj["metadata"]["annotations"][LEADER_ANNOTATION])
            assert record is not None
            taken = replace(record, holder_identity="successor")
            obj["metadata"]["annotations"][LEADER_ANNOTATION] = taken.encode()
            kube_api_server.admin("PUT", path, obj)
            data["split-brain"] = "written by a deposed leader"
            return data

        # Refused by the API server (the compare-and-swap), then, reading again, because the
        # lease names another holder, or because its own renewal found that out meanwhile.
        with pytest.raises(LeaderLostError, match="refused|no longer leads"):
            old.latch.guarded_update(token, successor_takes_over_meanwhile)
        after = ConfigMap.from_json(kube_api_server.admin("GET", path))
        assert "split-brain" not in after.data
        assert holder_of(after) == "successor"
        with pytest.raises(LeaderLostError):
            store.add_checkpoint(CompletedCheckpointPointer(JOB, 2, "file:///c/chk-2", 2))
        assert old.latch.await_revocation(60)  # its next renewal finds the successor's lease

    def test_a_writer_that_missed_an_update_is_refused(
        self, make_services: Callable[..., KubernetesHaServices]
    ):
        services = make_services("one")
        services.start_contending()
        assert services.latch.await_leadership(60) is not None
        stale = services.create_completed_checkpoint_store(JOB, 3)
        fresh = services.create_completed_checkpoint_store(JOB, 3)
        fresh.add_checkpoint(CompletedCheckpointPointer(JOB, 5, "file:///c/chk-5", 5))
        with pytest.raises(LeaderLostError, match="changed under"):
            stale.add_checkpoint(CompletedCheckpointPointer(JOB, 4, "file:///c/chk-4", 4))
        assert [p.checkpoint_id for p in fresh.get_all()] == [5]

    @pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
    def test_a_registration_whose_answer_was_lost_is_settled_by_the_next_one(
        self, k8s_config: dict[str, str], monkeypatch: pytest.MonkeyPatch, applied: bool
    ):
        """The answer to the write registering checkpoint 2 is lost (the API server
        restarted under it): the store cannot know whether it was applied. The next
        registration finds out from the ConfigMap and goes on from what is there, rather
        than taking the store's own write for another leader's."""
        client = TestingAnswerLosingClient(resolve_connection(k8s_config), timeout_s=10)
        monkeypatch.setattr(ha_services_module, "create_api_client", lambda *_a, **_k: client)
        services = KubernetesHaServices(k8s_config, "one")
        try:
            services.start_contending()
            assert services.latch.await_leadership(60) is not None
            store = services.create_completed_checkpoint_store(JOB, 1)
            first = CompletedCheckpointPointer(JOB, 1, "file:///c/chk-1", 1)
            second = CompletedCheckpointPointer(JOB, 2, "file:///c/chk-2", 2)
            third = CompletedCheckpointPointer(JOB, 3, "file:///c/chk-3", 3)
            assert store.add_checkpoint(first) == []
            client.lose_next_answer(applied=applied)
            with pytest.raises(PossibleInconsistentStateError):
                store.add_checkpoint(second)
            registered = services.create_completed_checkpoint_store(JOB, 1).get_all()
            assert registered == [second if applied else first]
            store.settle()  # what a restore asks first
            assert store.get_all() == registered
            # Either way the next one registers, and the one it subsumes, and what the
            # lost write dropped or would have registered, are handed back for deletion.
            subsumed = store.add_checkpoint(third)
            assert sorted(subsumed, key=lambda p: p.checkpoint_id) == [first, second]
            assert store.get_all() == [third]
            assert services.create_completed_checkpoint_store(JOB, 1).get_all() == [third]
        finally:
            services.close()

    def test_a_service_account_without_the_role_is_told_what_to_grant(
        self, kube_api_server: KubeApiServer, k8s_config: dict[str, str]
    ):
        kubeconfig, _ = kube_api_server.service_account_kubeconfig(
            NAMESPACE,
            f"no-configmaps-{uuid.uuid4().hex[:6]}",
            [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        )
        config = {**k8s_config, "kubernetes.config.file": str(kubeconfig)}
        with pytest.raises(ConfigurationError, match="configmaps get, list, watch, create, update"):
            KubernetesHaServices(config, "refused")

    def test_in_a_pod_the_service_account_of_the_pod_is_used(
        self,
        kube_api_server: KubeApiServer,
        k8s_config: dict[str, str],
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ):
        """What a master pod has: the API server's address in its environment, the token
        and the CA in the ServiceAccount's directory, no kubeconfig."""
        from weir.core.highavailability.kubernetes import connection

        account = tmp_path / "serviceaccount"
        account.mkdir()
        (account / "token").write_text(kube_api_server.token)
        (account / "ca.crt").write_bytes((kube_api_server.pki / "ca.crt").read_bytes())
        monkeypatch.setattr(connection, "SERVICE_ACCOUNT_DIR", account)
        config = {k: v for k, v in k8s_config.items() if k != "kubernetes.config.file"}
        environment = {
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(kube_api_server.port),
        }
        services = KubernetesHaServices(config, "in-a-pod", environment=environment)
        try:
            assert "ServiceAccount" in services.client.connection.source
            services.start_contending()
            token = services.latch.await_leadership(60)
            assert token is not None
            services.create_checkpoint_id_counter(JOB).set_count(3)
            assert services.create_checkpoint_id_counter(JOB).get() == 3
        finally:
            services.close()


class TestFencingOfAPausedLeader:
    def _start(
        self, config: dict[str, str], identifier: str, out: Path, delete_flag: Path
    ) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, str(CONTENDER), json.dumps(config), identifier, str(delete_flag)],
            stdout=out.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def test_a_leader_paused_past_its_lease_deletes_writes_and_answers_nothing_once_resumed(
        self,
        k8s_config: dict[str, str],
        make_services: Callable[..., KubernetesHaServices],
        tmp_path: Path,
    ):
        """The first leader, in a process of its own, stores a job's graph, counter and
        checkpoint pointer, then is paused (SIGSTOP) past its lease; a successor takes the
        lease and writes. Resumed, the former leader is told to remove the job's entries
        (as a JobMaster whose job ended would) while it keeps writing and asking whether
        it leads: it is never told it leads, and nothing it deletes or writes reaches the
        ConfigMap or the storage directory."""
        out, delete_flag = tmp_path / "paused.out", tmp_path / "delete-now"
        paused = self._start(k8s_config, "paused", out, delete_flag)
        try:
            wait(lambda: " wrote " in out.read_text(), "the first leader's writes")
            assert "stored" in out.read_text()
            # The successor's own lease is long: a loaded machine delaying its renewals
            # must not hand the lease back to the resumed process during the test.
            successor = make_services("successor", {**k8s_config, **SLOW})
            successor.start_contending()
            paused.send_signal(signal.SIGSTOP)
            token = successor.latch.await_leadership(90)
            assert token is not None
            data = successor.latch.guarded_update(token, lambda d: {**d, "successor": "mine"})
            writes_at_takeover = data["contender-writes"]
            graphs = successor.get_job_graph_store()
            assert graphs.get_job_ids() == [CONTENDED_JOB]
            assert graphs.recover_job_graph(CONTENDED_JOB) == GRAPH
            successor.create_completed_checkpoint_store(CONTENDED_JOB, 1).add_checkpoint(
                CompletedCheckpointPointer(CONTENDED_JOB, 6, "file:///c/chk-6", 6)
            )
            assert successor.create_checkpoint_id_counter(CONTENDED_JOB).get_and_increment() == 5
            graph_files = sorted((tmp_path / "ha").rglob("submittedJobGraph-*"))
            assert len(graph_files) == 1
            before_resume = out.stat().st_size
            delete_flag.touch()
            resumed_at = time.monotonic()
            paused.send_signal(signal.SIGCONT)

            def after_resume(kind: str) -> list[str]:
                lines = out.read_text()[before_resume:].splitlines()
                return [
                    line for line in lines if line.startswith(kind) and asked_at(line) > resumed_at
                ]

            wait(
                lambda: len(after_resume("session ")) >= 10 and len(after_resume("delete ")) >= 9,
                "the resumed leader's attempts",
            )
            resumed = out.read_text()[before_resume:]
            # Asked after it resumed, it never believed it led, and none of its writes went
            # through (an attempt begun before the pause may end after it: refused too).
            attempts = after_resume("session ")
            assert all("leading=False" in line and "refused" in line for line in attempts), resumed
            # Every delete began after the resume: each was refused.
            deletes = [line for line in resumed.splitlines() if line.startswith("delete ")]
            assert deletes, resumed
            assert all(" refused: " in line for line in deletes), resumed
            # A write answered just before the pause may be told after it: one the
            # successor saw already.
            late = [
                int(line.rsplit(" wrote ", 1)[1])
                for line in resumed.splitlines()
                if " wrote " in line
            ]
            assert all(n <= int(writes_at_takeover) for n in late), resumed
            assert "revoked" in resumed
            now = successor.latch.read()
            assert now is not None
            assert now.data["contender-writes"] == writes_at_takeover
            assert now.data["successor"] == "mine"
            assert holder_of(now) == token
            assert successor.latch.has_leadership(token)
            # The job's entries and its graph's file are as the successor left them.
            assert graphs.get_job_ids() == [CONTENDED_JOB]
            assert graphs.recover_job_graph(CONTENDED_JOB) == GRAPH
            assert sorted((tmp_path / "ha").rglob("submittedJobGraph-*")) == graph_files
            stored = successor.create_completed_checkpoint_store(CONTENDED_JOB, 1)
            assert [p.checkpoint_id for p in stored.get_all()] == [6]
            assert successor.create_checkpoint_id_counter(CONTENDED_JOB).get() == 6
        finally:
            paused.send_signal(signal.SIGCONT)
            paused.kill()
            paused.wait()


def asked_at(line: str) -> float:
    return float(line.split("asked=", 1)[1].split(" ", 1)[0])


class TestTheApiServerRestarted:
    # The shared API server is restarted (same port, same etcd): the tests of a worker
    # run one at a time, and every test uses a ConfigMap of its own.
    def test_nothing_is_lost_and_one_leader_remains(
        self, kube_api_server: KubeApiServer, k8s_config: dict[str, str]
    ):
        config = k8s_config
        a, b = KubernetesHaServices(config, "a"), KubernetesHaServices(config, "b")
        try:
            a.start_contending()
            token = a.latch.await_leadership(60)
            assert token is not None
            b.start_contending()
            a.get_job_graph_store().put_job_graph(JOB, b"graph")
            a.create_checkpoint_id_counter(JOB).set_count(7)
            a.create_completed_checkpoint_store(JOB, 2).add_checkpoint(
                CompletedCheckpointPointer(JOB, 6, "file:///c/chk-6", 6)
            )

            kube_api_server.restart_api_server()

            def one_leader() -> KubernetesHaServices | None:
                leaders = [s for s in (a, b) if (t := s.latch.token) and s.latch.confirm(t)]
                return leaders[0] if len(leaders) == 1 else None

            leader = wait(one_leader, "one confirmed leader after the restart")
            assert [a.latch.token, b.latch.token].count(None) == 1
            assert leader.get_job_graph_store().get_job_ids() == [JOB]
            assert leader.get_job_graph_store().recover_job_graph(JOB) == b"graph"
            counter = leader.create_checkpoint_id_counter(JOB)
            assert counter.get() == 7
            assert counter.get_and_increment() == 7  # and the leader writes again
            store = leader.create_completed_checkpoint_store(JOB, 2)
            assert [p.checkpoint_id for p in store.get_all()] == [6]
        finally:
            a.close()
            b.close()
