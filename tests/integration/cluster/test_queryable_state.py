"""Queryable state against a running keyed job on the MiniCluster: a client reads a key's
current count through the master's proxy, routed by key group to the TaskManager whose
subtask owns it, and sees it grow; Flink's errors for unknown jobs, names and keys."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from test_checkpoint_recovery import await_condition

import weir.state
from weir.common import Configuration, Types, WatermarkStrategy
from weir.core import rpc
from weir.core.errors import (
    JobNotFoundError,
    UnknownKeyOrNamespaceError,
    UnknownKvStateKeyGroupLocationError,
    UnknownKvStateLocationError,
)
from weir.core.security import Endpoint, SecurityConfig
from weir.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource
from weir.datastream.state import MapStateDescriptor, ValueStateDescriptor
from weir.proto import common_pb2, dispatcher_pb2_grpc
from weir.queryablestate import ImmutableStateError, QueryableStateClient

pytestmark = pytest.mark.spark

KEYS = [f"k{i}" for i in range(8)]


class CountPerKey(KeyedProcessFunction):
    """Counts the elements of each key in a queryable ValueState; emits nothing."""

    def open(self, runtime_context):
        descriptor = ValueStateDescriptor("count", Types.LONG())
        descriptor.set_queryable("count-by-key")
        self.count = runtime_context.get_state(descriptor)

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)


@pytest.fixture(scope="module")
def counting_job(mini_cluster) -> Iterator[tuple[str, str]]:
    """(proxy address, job id) of an unbounded keyed count at parallelism 2."""
    from weir.core.executor import register_executor

    register_executor(mini_cluster.executor())
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(2)
    numbers = env.from_source(
        NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
    )
    keyed = numbers.key_by(lambda n: KEYS[n % len(KEYS)], key_type=Types.STRING())
    keyed.process(CountPerKey())
    latest = keyed.as_queryable_state("latest-number")
    assert latest.get_queryable_state_name() == "latest-number"
    client = env.execute_async("queryable count")
    register_executor(None)
    job_id = str(client.get_job_id())
    yield mini_cluster.queryable_state_proxy_address, job_id
    client.cancel().result()


def _client(address: str) -> QueryableStateClient:
    """The client by the name weir.state gives it, with the proxy's "host:port"."""
    client = weir.state.QueryableStateClient(address)
    host, port = address.rsplit(":", 1)
    with QueryableStateClient(host, int(port)) as by_host_and_port:
        assert client.address == by_host_and_port.address == address
    return client


def _count(client: QueryableStateClient, job_id: str, key: str) -> int | None:
    """The key's count, or None while its subtask has not registered or counted it."""
    future = client.get_kv_state(
        job_id, "count-by-key", key, Types.STRING(), ValueStateDescriptor("count", Types.LONG())
    )
    try:
        return future.result().value()
    except (
        UnknownKeyOrNamespaceError,
        UnknownKvStateLocationError,
        UnknownKvStateKeyGroupLocationError,  # deploying: no subtask serves the key yet
    ):
        return None


class TestQueryableState:
    def test_a_client_reads_a_key_s_count_and_sees_it_grow(self, counting_job):
        address, job_id = counting_job
        assert address.startswith("127.0.0.1:")
        with _client(address) as client:
            first = await_condition(lambda: _count(client, job_id, "k3"), "a count of k3")
            await_condition(
                lambda: (_count(client, job_id, "k3") or 0) > first, "the count of k3 to grow"
            )
            # Every key is served, whichever subtask (and TaskManager) owns its key group.
            for key in KEYS:
                await_condition(lambda k=key: _count(client, job_id, k), f"a count of {key}")

    def test_the_location_covers_every_key_group_with_both_subtasks(
        self, counting_job, mini_cluster
    ):
        _, job_id = counting_job
        with _client(counting_job[0]) as client:
            await_condition(lambda: _count(client, job_id, "k0"), "a count of k0")
        with rpc.create_channel(mini_cluster.address, SecurityConfig(), Endpoint.REST) as channel:
            stub = dispatcher_pb2_grpc.DispatcherStub(channel)

            def registered_by_both():
                location = rpc.call(
                    "RequestKvStateLocation",
                    stub.RequestKvStateLocation,
                    common_pb2.KvStateLocationRequest(
                        job_id=job_id, registration_name="count-by-key"
                    ),
                )
                return location if len(location.entries) == 2 else None

            found = await_condition(registered_by_both, "both subtasks to register count-by-key")
        # The job's own key hashing (PyFlink's for a String key) routes the key.
        assert found.num_key_groups == 128 and found.key_type == "String"
        covered = sorted(
            (e.start_key_group, e.end_key_group, e.subtask_index) for e in found.entries
        )
        assert covered == [(0, 63, 0), (64, 127, 1)]
        assert all(e.server_address.startswith("127.0.0.1:") for e in found.entries)

    def test_as_queryable_state_keeps_the_latest_element_of_each_key(self, counting_job):
        address, job_id = counting_job
        descriptor = ValueStateDescriptor("latest-number", Types.LONG())
        with _client(address) as client:

            def latest():
                future = client.get_kv_state(
                    job_id, "latest-number", "k5", Types.STRING(), descriptor
                )
                try:
                    return future.result().value()
                except (
                    UnknownKeyOrNamespaceError,
                    UnknownKvStateLocationError,
                    UnknownKvStateKeyGroupLocationError,
                ):
                    return None

            first = await_condition(latest, "the latest element of k5")
            assert first % len(KEYS) == 5
            later = await_condition(lambda: (latest() or 0) > first and latest(), "a later one")
            assert later % len(KEYS) == 5

    def test_queried_state_is_read_only(self, counting_job):
        address, job_id = counting_job
        with _client(address) as client:
            await_condition(lambda: _count(client, job_id, "k1"), "a count of k1")
            state = client.get_kv_state(
                job_id, "count-by-key", "k1", Types.STRING(), ValueStateDescriptor("count", None)
            ).result()
            with pytest.raises(ImmutableStateError, match="read-only"):
                state.update(0)
            assert (_count(client, job_id, "k1") or 0) >= state.value()

    def test_unknown_keys_names_and_jobs_fail_as_flink_s_do(self, counting_job):
        address, job_id = counting_job
        descriptor = ValueStateDescriptor("count", Types.LONG())
        with _client(address) as client:
            await_condition(lambda: _count(client, job_id, "k0"), "a count of k0")
            no_key = client.get_kv_state(
                job_id, "count-by-key", "never-seen", Types.STRING(), descriptor
            )
            with pytest.raises(UnknownKeyOrNamespaceError, match="never-seen"):
                no_key.result()
            no_name = client.get_kv_state(job_id, "no-such-state", "k0", Types.STRING(), descriptor)
            with pytest.raises(UnknownKvStateLocationError, match="count-by-key"):
                no_name.result()
            no_job = client.get_kv_state(
                uuid.uuid4().hex, "count-by-key", "k0", Types.STRING(), descriptor
            )
            with pytest.raises(JobNotFoundError):
                no_job.result()
            with pytest.raises(TypeError, match="queryable state key"):
                client.get_kv_state(job_id, "count-by-key", ["k0"], None, descriptor)
            with pytest.raises(TypeError, match="descriptor"):
                client.get_kv_state(job_id, "count-by-key", "k0", None, object())
        # The job runs on after every bad query.
        with _client(address) as client:
            first = _count(client, job_id, "k0") or 0
            await_condition(lambda: (_count(client, job_id, "k0") or 0) > first, "k0 to grow")


class SeenPerKey(KeyedProcessFunction):
    """Per key, in a queryable MapState: how often each residue mod 3 was seen."""

    def open(self, runtime_context):
        descriptor = MapStateDescriptor("seen", Types.INT(), Types.LONG())
        descriptor.set_queryable("seen-by-key")
        self.seen = runtime_context.get_map_state(descriptor)

    def process_element(self, value, ctx):
        residue = value % 3
        self.seen.put(residue, (self.seen.get(residue) or 0) + 1)


def test_map_state_on_rocksdb_is_queryable_too(cluster):
    """A job on the rocksdb backend (state serialized in RocksDB, read back on the task's
    thread) at parallelism 1, next to the module's job."""
    configuration = Configuration()
    configuration.set_string("state.backend.type", "rocksdb")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.from_source(
        NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
    ).key_by(lambda n: n % 2, key_type=Types.INT()).process(SeenPerKey())
    job = env.execute_async("queryable map state on rocksdb")
    job_id = str(job.get_job_id())
    descriptor = MapStateDescriptor("seen", Types.INT(), Types.LONG())
    try:
        with _client(cluster.queryable_state_proxy_address) as client:

            def seen_of_odd_numbers():
                future = client.get_kv_state(job_id, "seen-by-key", 1, Types.INT(), descriptor)
                try:
                    state = future.result()
                except (
                    UnknownKeyOrNamespaceError,
                    UnknownKvStateLocationError,
                    UnknownKvStateKeyGroupLocationError,
                ):
                    return None
                return dict(state.items()) if len(list(state.keys())) == 3 else None

            first = await_condition(seen_of_odd_numbers, "every residue of an odd number")
            assert set(first) == {0, 1, 2} and all(v > 0 for v in first.values())
            await_condition(
                lambda: (seen_of_odd_numbers() or {}).get(1, 0) > first[1], "the counts to grow"
            )
    finally:
        job.cancel().result()
