"""Bad input gets a clear error, loses nothing, and leaves the cluster serving."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import threading
import uuid
from pathlib import Path

import pytest

from weir.client.cluster_components import ClusterComponents
from weir.client.dispatcher_client import DispatcherGateway
from weir.client.executor import RemoteExecutor
from weir.client.mini_cluster import MiniCluster
from weir.common import Configuration
from weir.core.errors import (
    ConfigurationError,
    InvalidJobIdError,
    JobExecutionError,
    JobGraphError,
    JobNotFoundError,
    ServiceUnavailableError,
    TaskManagerNotFoundError,
)
from weir.core.executor import register_executor
from weir.core.job_graph_codec import encode_job_graph
from weir.core.task_manager_files import TaskManagerFileType
from weir.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark


def _cluster_still_serves() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    assert sorted(env.from_collection([3, 1, 2]).map(lambda x: x * 10).execute_and_collect()) == [
        10,
        20,
        30,
    ]


def test_unpicklable_function_is_refused_before_submission(cluster):
    lock = threading.Lock()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).map(lambda x: (x, lock)).name("holds a lock").print()
    with pytest.raises(JobGraphError, match="holds a lock") as info:
        env.execute()
    assert "open()" in str(info.value)  # says what to do
    _cluster_still_serves()


def test_garbage_bytes_as_a_job_graph(cluster):
    with DispatcherGateway(cluster.address) as gateway:
        with pytest.raises(JobGraphError, match="cannot be decoded"):
            gateway.submit_job(b"\x08\x96\x01garbage\xff\xfe\x00")
        assert gateway.list_jobs(include_terminated=True) is not None
    _cluster_still_serves()


def test_unknown_job_id(cluster):
    unknown = "0123456789abcdef" * 2
    with DispatcherGateway(cluster.address) as gateway:
        with pytest.raises(JobNotFoundError, match=f"no job with id '{unknown}'"):
            gateway.job_details(unknown)
        with pytest.raises(JobNotFoundError):
            gateway.cancel_job(unknown)
    _cluster_still_serves()


@pytest.mark.parametrize("bad_id", ["../../x", "not-a-job", "a" * 31, "g" * 32, "a" * 32 + "/"])
def test_a_malformed_job_id_is_refused_wherever_a_client_gives_one(cluster, bad_id):
    with DispatcherGateway(cluster.address) as gateway:
        for call in (gateway.job_details, gateway.cancel_job, gateway.checkpoint_statistics):
            with pytest.raises(InvalidJobIdError, match="32 hex digits") as info:
                call(bad_id)
            assert repr(bad_id) in str(info.value)
        env = StreamExecutionEnvironment.get_execution_environment()
        env.from_collection([1]).print()
        graph = dataclasses.replace(env._job_graph("bad id").job_graph, job_id=bad_id)
        with pytest.raises(JobGraphError, match="32 hex digits"):
            gateway.submit_job(encode_job_graph(graph))
        assert bad_id not in [j.job_id for j in gateway.list_jobs(include_terminated=True)]
    _cluster_still_serves()


def test_a_job_needing_more_slots_than_the_cluster_can_give_fails_clearly(cluster):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(5)  # local[2]: at most two TaskManagers of one slot
    env.from_collection(list(range(10))).rebalance().map(lambda x: x).print()
    with pytest.raises(JobExecutionError, match="slot") as info:
        env.execute("too wide")
    assert "SlotAllocationError" in info.value.cause
    _cluster_still_serves()


def test_invalid_configuration_key_and_value_are_named():
    with pytest.raises(ConfigurationError, match="'taskmanager.numberOfSlots'"):
        MiniCluster({"taskmanager.numberOfSlots": "2"})
    conf = Configuration()
    conf.set_string("parallelism.default", "many")
    with pytest.raises(ConfigurationError, match="parallelism.default"):
        StreamExecutionEnvironment.get_execution_environment(conf)
    with pytest.raises(ConfigurationError, match=r"'spark.master'.*'locla\[2\]'"):
        MiniCluster({"spark.master": "locla[2]"})
    with pytest.raises(ConfigurationError, match=r"heartbeat.timeout \(1000 ms\)"):
        MiniCluster({"heartbeat.interval": "2 s", "heartbeat.timeout": "1 s"})


@pytest.mark.parametrize("key", ["execution.checkpointing.dir", "execution.savepoint.path"])
def test_a_nul_character_in_a_setting_is_refused_naming_the_key(cluster, key):
    conf = Configuration()
    conf.set_string(key, "file:///tmp/x\x00y")
    with pytest.raises(ConfigurationError, match=rf"'{key}'.*NUL character \(at position 13\)"):
        env = StreamExecutionEnvironment.get_execution_environment(conf)
        env.from_collection([1]).print()
        env.execute("nul setting")
    # A JobGraph that carries one anyway (built elsewhere) is refused by the Dispatcher.
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).print()
    graph = env._job_graph("nul setting").job_graph
    graph = dataclasses.replace(graph, config={**graph.config, key: "file:///tmp/x\x00y"})
    with DispatcherGateway(cluster.address) as gateway:
        with pytest.raises(ConfigurationError, match=rf"'{key}'.*NUL character"):
            gateway.submit_job(encode_job_graph(graph))
        assert graph.job_id not in [j.job_id for j in gateway.list_jobs(include_terminated=True)]
    _cluster_still_serves()


def test_user_function_raising_fails_the_job_with_the_remote_traceback(cluster):
    def explode(x):
        if x == 7:
            msg = f"bad record {x}"
            raise ValueError(msg)
        return x

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(list(range(20))).rebalance().map(explode).print()
    with pytest.raises(JobExecutionError) as info:
        env.execute("explodes")
    assert info.value.status == "FAILED"
    assert "ValueError: bad record 7" in info.value.cause
    assert "in explode" in info.value.cause  # the user's own frame
    _cluster_still_serves()


def test_a_second_master_on_the_same_port_does_not_start(cluster, spark_context):
    port = int(cluster.address.rsplit(":", 1)[1])
    second = ClusterComponents(cluster.config, spark_context)
    with pytest.raises(ServiceUnavailableError, match="port in use") as info:
        second.start(dispatcher_port=port)
    assert "jobmanager.rpc.port" in str(info.value)
    # Every client call reaches the first master: it knows the job it just ran.
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1]).map(lambda x: x).print()
    job_id = str(env.execute("first master").get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        for _ in range(8):
            ids = [j.job_id for j in gateway.list_jobs(include_terminated=True)]
            assert job_id in ids
    _cluster_still_serves()


def test_a_record_larger_than_a_frame_names_its_size_the_limit_and_the_key(cluster):
    def job(limit: str) -> StreamExecutionEnvironment:
        conf = Configuration()
        conf.set_string("taskmanager.network.max-frame-size", limit)
        env = StreamExecutionEnvironment.get_execution_environment(conf)
        env.set_parallelism(2)
        (
            env.from_collection([1, 2, 3, 4])
            .map(lambda x: b"r" * (2 << 20) if x == 3 else b"small")
            .rebalance()
            .map(len)
            .print()
        )
        return env

    with pytest.raises(JobExecutionError) as info:
        job("1 mb").execute("record too large")
    cause = info.value.cause
    assert "RecordTooLargeError: a record of 2097" in cause
    assert "1048576 bytes (1 MiB, taskmanager.network.max-frame-size)" in cause
    assert "producer failed" not in cause
    job("4 mb").execute("record fits")  # raising the limit lets it through
    _cluster_still_serves()


def test_a_user_function_calling_os_exit_fails_its_task_not_the_task_manager(cluster):
    with DispatcherGateway(cluster.address) as gateway:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        env.from_collection(list(range(10))).rebalance().map(
            lambda x: os._exit(3) if x == 7 else x
        ).name("exits").print()
        with pytest.raises(JobExecutionError) as info:
            env.execute("calls os._exit")
        cause = info.value.cause
        assert re.search(r"user code in task exits[^\n]* \(\d/2\) called os._exit\(3\)", cause)
        assert "exit code 3" in cause
        assert "UserSystemExitError" in cause
        before = {tm.resource_id for tm in gateway.list_task_managers()}
        _cluster_still_serves()
        # No TaskManager died: the same ones serve the next job.
        assert {tm.resource_id for tm in gateway.list_task_managers()} == before


def test_jobs_that_ran_on_one_task_manager_share_no_files_and_no_module_state(cluster, tmp_path):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "weir_probe_state.py").write_text("STATE = []\n")
    module_dir = str(modules)
    leftover = f"leftover-{uuid.uuid4().hex}.txt"

    def import_probe():
        if module_dir not in sys.path:
            sys.path.insert(0, module_dir)
        import weir_probe_state

        return weir_probe_state

    def first(x):
        probe = import_probe()
        probe.STATE.append(x)
        with open(leftover, "w") as out:  # a relative path: the job's own directory
            out.write("left behind")
        return os.getcwd(), len(probe.STATE)

    def second(x):
        seen = len(import_probe().STATE)
        return os.getcwd(), os.path.exists(leftover), seen

    def run(function):
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)  # one subtask on each of the cluster's two TaskManagers
        return list(env.from_collection([1, 2]).rebalance().map(function).execute_and_collect())

    try:
        first_dirs = {cwd for cwd, _ in run(first)}
        second_results = run(second)
    finally:
        if os.path.exists(leftover):  # only without per-job directories
            os.remove(leftover)
    second_dirs = {cwd for cwd, _, _ in second_results}
    assert [(exists, seen) for _, exists, seen in second_results] == [(False, 0), (False, 0)]
    for directories in (first_dirs, second_dirs):
        names = {os.path.basename(d)[: len("job_") + 32] for d in directories}
        assert len(directories) == 2 and len(names) == 1
        assert re.fullmatch(r"job_[0-9a-f]{32}", names.pop())
    assert first_dirs.isdisjoint(second_dirs)
    # the first job's directories went when it left its TaskManagers
    assert not any(os.path.exists(d) for d in first_dirs)
    assert os.getcwd() not in first_dirs | second_dirs


def test_what_jobs_print_stays_in_task_manager_files_of_bounded_size(cluster, capfd):
    # A job no client is attached to (`weir run -d`): its prints go to the TaskManagers.
    register_executor(RemoteExecutor(cluster.address, attach_stdout=False))
    marker = uuid.uuid4().hex
    padding = "p" * 200

    def chatty(x):
        print(f"{marker} {x:06d} {padding}")
        return x

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    # ~1.4 MB printed on each TaskManager: past its 3 files of 256 kB
    env.from_collection(list(range(12000))).rebalance().map(chatty).print()
    job_id = str(env.execute("prints a lot").get_job_id())

    cap = int(cluster.config["env.log.max-file-size"])
    log_dir = Path(cluster.config["env.log.dir"])
    printed_in = {
        p.parent for p in log_dir.glob("taskmanager-*/taskmanager.out*") if marker in p.read_text()
    }
    assert len(printed_in) == 2  # both TaskManagers
    for directory in printed_in:
        files = sorted(p.name for p in directory.glob("taskmanager.out*"))
        assert files == ["taskmanager.out", "taskmanager.out.1", "taskmanager.out.2"]
        assert all(p.stat().st_size <= cap for p in directory.iterdir())
        # the newest lines are kept: the last record each TaskManager printed
        assert re.search(rf"{marker} 01199[89]", (directory / "taskmanager.out").read_text())
    logs = "".join(p.read_text() for p in log_dir.glob("taskmanager-*/taskmanager.log*"))
    assert job_id in logs  # the TaskManagers' own logging, in their taskmanager.log
    assert marker not in capfd.readouterr().err  # nothing of it in the master's output


def test_task_manager_files_are_read_through_the_dispatcher(cluster):
    # What `weir logs` shows: each TaskManager's taskmanager.out and .log, from its host.
    register_executor(RemoteExecutor(cluster.address, attach_stdout=False))
    marker = uuid.uuid4().hex
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.from_collection(list(range(20))).rebalance().map(lambda x: f"{marker} {x}").print()
    job_id = str(env.execute("prints its marker").get_job_id())

    with DispatcherGateway(cluster.address) as gateway:
        ids = [tm.resource_id for tm in gateway.list_task_managers()]
        outs = {rid: gateway.task_manager_file(rid, TaskManagerFileType.STDOUT) for rid in ids}
        printed = "".join(f.content.decode() for f in outs.values())
        assert {f"{marker} {x}" for x in range(20)} <= set(re.findall(rf"{marker} \d+", printed))
        assert all(f.path.endswith(f"taskmanager-{rid}/taskmanager.out") for rid, f in outs.items())
        logs = "".join(
            gateway.task_manager_file(rid, TaskManagerFileType.LOG).content.decode() for rid in ids
        )
        assert job_id in logs

        # A tail: the newest bytes, said to be cut.
        some = next(rid for rid, f in outs.items() if marker in f.content.decode())
        tail = gateway.task_manager_file(some, TaskManagerFileType.STDOUT, max_bytes=10)
        assert tail.truncated and len(tail.content) == 10
        assert gateway.task_manager_file(some, TaskManagerFileType.STDOUT).content.endswith(
            tail.content
        )

        with pytest.raises(TaskManagerNotFoundError, match="no registered TaskManager 'nope'"):
            gateway.task_manager_file("nope", TaskManagerFileType.STDOUT)
    _cluster_still_serves()
