"""One suite for every implementation of the job graph store, the checkpoint id counter and
the completed checkpoint store: standalone (in memory, one master), ZooKeeper (a real
server; pointers in ZooKeeper, job graphs in storageDir: a local directory, and a bucket of
a real S3 server) and Kubernetes (a real API server; pointers in a ConfigMap, job graphs
in storageDir)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from weir.core.highavailability import (
    CompletedCheckpointPointer,
    HighAvailabilityServices,
    StandaloneHaServices,
)
from weir.core.ids import JobId
from weir.core.job_status import JobStatus

JOB = JobId("ab" * 16)


@pytest.fixture(params=["standalone", "zookeeper", "zookeeper-s3", "kubernetes"])
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HighAvailabilityServices]:
    if request.param == "standalone":
        yield StandaloneHaServices()
        return
    if request.param == "kubernetes":
        yield from kubernetes_services(request, tmp_path)
        return
    from weir.core.highavailability.zookeeper import ZooKeeperHaServices

    zookeeper = request.getfixturevalue("zookeeper")
    storage = {"high-availability.storageDir": f"file://{tmp_path}/ha"}
    if request.param == "zookeeper-s3":
        from weir.core import s3_settings

        minio = request.getfixturevalue("minio")
        storage = {
            **minio.config(),
            "high-availability.storageDir": f"s3://{minio.new_bucket()}/ha",
        }
        s3_settings.configure(storage)
    services = ZooKeeperHaServices(
        {
            "high-availability.type": "zookeeper",
            "high-availability.zookeeper.quorum": zookeeper.address,
            "high-availability.cluster-id": f"contract-{uuid.uuid4().hex[:8]}",
            **storage,
        },
        "contract",
    )
    services.start_contending()
    assert services.latch.await_leadership(30) is not None
    yield services
    services.close()


def kubernetes_services(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[HighAvailabilityServices]:
    from weir.core.highavailability.kubernetes import KubernetesHaServices

    api_server = request.getfixturevalue("kube_api_server")
    config = api_server.ha_config(f"contract-{uuid.uuid4().hex[:8]}", f"file://{tmp_path}/ha")
    services = KubernetesHaServices(config, "contract")
    services.start_contending()
    assert services.latch.await_leadership(30) is not None
    yield services
    services.close()


def pointer(checkpoint_id: int) -> CompletedCheckpointPointer:
    return CompletedCheckpointPointer(JOB, checkpoint_id, f"file:///c/chk-{checkpoint_id}", 1)


class TestCheckpointIdCounter:
    def test_ids_increase_from_one_and_never_repeat(self, services: HighAvailabilityServices):
        counter = services.create_checkpoint_id_counter(JOB)
        assert [counter.get_and_increment() for _ in range(3)] == [1, 2, 3]
        assert counter.get() == 4

    def test_set_count_moves_the_next_id(self, services: HighAvailabilityServices):
        counter = services.create_checkpoint_id_counter(JOB)
        counter.set_count(10)
        assert counter.get_and_increment() == 10
        assert counter.get() == 11


class TestCompletedCheckpointStore:
    def test_keeps_the_newest_and_returns_what_it_subsumed(
        self, services: HighAvailabilityServices
    ):
        store = services.create_completed_checkpoint_store(JOB, max_retained=2)
        assert store.get_latest() is None
        assert store.add_checkpoint(pointer(1)) == []
        assert store.add_checkpoint(pointer(2)) == []
        assert store.add_checkpoint(pointer(3)) == [pointer(1)]
        assert store.get_all() == [pointer(2), pointer(3)]
        assert store.get_latest() == pointer(3)


class TestShutdown:
    """A job's counter and pointers go when it ends for good (Flink drops them from
    ZooKeeper then), and stay when it is only suspended here (the next leader's)."""

    @pytest.mark.parametrize("status", [JobStatus.FINISHED, JobStatus.CANCELED, JobStatus.FAILED])
    def test_a_globally_terminal_job_leaves_nothing(
        self, services: HighAvailabilityServices, status: JobStatus
    ):
        counter = services.create_checkpoint_id_counter(JOB)
        counter.set_count(5)
        store = services.create_completed_checkpoint_store(JOB, max_retained=2)
        store.add_checkpoint(pointer(4))
        store.shutdown(status)
        counter.shutdown(status)
        assert store.get_all() == []
        if isinstance(services, StandaloneHaServices):
            return  # in memory: nothing outlives the objects
        assert services.create_completed_checkpoint_store(JOB, max_retained=2).get_all() == []
        assert services.create_checkpoint_id_counter(JOB).get() == 1

    def test_a_suspended_job_keeps_its_counter_and_pointers(
        self, services: HighAvailabilityServices
    ):
        counter = services.create_checkpoint_id_counter(JOB)
        counter.set_count(5)
        store = services.create_completed_checkpoint_store(JOB, max_retained=2)
        store.add_checkpoint(pointer(4))
        store.shutdown(JobStatus.SUSPENDED)
        counter.shutdown(JobStatus.SUSPENDED)
        again = services.create_completed_checkpoint_store(JOB, max_retained=2)
        if not isinstance(services, StandaloneHaServices):
            assert again.get_all() == [pointer(4)]
            assert services.create_checkpoint_id_counter(JOB).get() == 5
        assert store.get_all() == [pointer(4)]


class TestJobGraphStore:
    def test_put_recover_remove(self, services: HighAvailabilityServices):
        store = services.get_job_graph_store()
        store.put_job_graph(JOB, b"graph bytes")
        if isinstance(services, StandaloneHaServices):
            # Without HA nothing outlives the master: there is nothing to recover.
            assert store.get_job_ids() == []
            assert store.recover_job_graph(JOB) is None
            return
        assert store.get_job_ids() == [JOB]
        assert store.recover_job_graph(JOB) == b"graph bytes"
        store.remove_job_graph(JOB)
        assert store.get_job_ids() == []
        assert store.recover_job_graph(JOB) is None


class TestStoresOutliveTheirWriter:
    @pytest.mark.parametrize("kind", ["zookeeper", "kubernetes"])
    def test_a_new_leader_reads_what_the_old_one_wrote(
        self, kind: str, request: pytest.FixtureRequest, tmp_path: Path
    ):
        from weir.core.highavailability.factory import create_ha_services

        cluster = f"outlive-{uuid.uuid4().hex[:8]}"
        storage = f"file://{tmp_path}/ha"
        if kind == "zookeeper":
            config = {
                "high-availability.type": "zookeeper",
                "high-availability.zookeeper.quorum": request.getfixturevalue("zookeeper").address,
                "high-availability.cluster-id": cluster,
                "high-availability.storageDir": storage,
            }
        else:
            config = request.getfixturevalue("kube_api_server").ha_config(cluster, storage)
        writer = create_ha_services(config, "writer")
        writer.start_contending()
        assert writer.latch.await_leadership(30) is not None
        writer.get_job_graph_store().put_job_graph(JOB, b"g")
        writer.create_checkpoint_id_counter(JOB).set_count(8)
        writer.create_completed_checkpoint_store(JOB, 3).add_checkpoint(pointer(7))
        writer.close()
        # Another master of the same cluster: what a standby that won reads.
        reader = create_ha_services(config, "reader")
        try:
            assert reader.get_job_graph_store().get_job_ids() == [JOB]
            assert reader.get_job_graph_store().recover_job_graph(JOB) == b"g"
            assert reader.create_checkpoint_id_counter(JOB).get() == 8
            assert reader.create_completed_checkpoint_store(JOB, 3).get_latest() == pointer(7)
        finally:
            reader.close()
