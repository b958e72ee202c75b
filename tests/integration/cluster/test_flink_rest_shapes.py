"""Flink 2.3's REST API as its own clients read it, against the MiniCluster: every field
Flink's CLI and dashboard read is there, and where Flink's Java class has a primitive it
is a value, never null (Jackson refuses a null for a primitive, and the CLI gives up).
The field lists follow Flink 2.3's message classes (``flink-runtime``'s
``rest.messages``). Every endpoint the dashboard calls answers, none with a 404.

The real clients (Flink's CLI and its dashboard in Chromium) run against a cluster in
tests/e2e/test_flink_clients.py (``make test-long``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from test_checkpoint_recovery import await_condition
from test_rest_api import _post_file

from weir.common import Configuration, Types, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

NULLABLE = None
"""A field Flink's class lets be null (a boxed or @Nullable one): it must be there."""
NUMBER = (int, float)

JOB_DETAILS = {  # MultipleJobsDetails' JobDetails: what `flink list` reads
    "jid": str,
    "name": str,
    "start-time": int,
    "end-time": int,
    "duration": int,
    "state": str,
    "last-modification": int,
    "tasks": dict,
    "pending-operators": int,
}
CLUSTER_OVERVIEW = {
    "taskmanagers": int,
    "slots-total": int,
    "slots-available": int,
    "taskmanagers-blocked": NULLABLE,
    "slots-free-and-blocked": NULLABLE,
    "jobs-running": int,
    "jobs-finished": int,
    "jobs-cancelled": int,
    "jobs-failed": int,
}
JOB_DETAILS_INFO = {
    "jid": str,
    "application-id": str,
    "name": str,
    "isStoppable": bool,
    "state": str,
    "job-type": NULLABLE,
    "schedulerType": NULLABLE,
    "start-time": int,
    "end-time": int,
    "duration": int,
    "maxParallelism": int,
    "now": int,
    "timestamps": dict,
    "vertices": list,
    "status-counts": dict,
    "plan": dict,
    "pending-operators": int,
}
JOB_VERTEX = {
    "id": str,
    "slotSharingGroupId": str,
    "name": str,
    "maxParallelism": int,
    "parallelism": int,
    "status": str,
    "start-time": int,
    "end-time": int,
    "duration": int,
    "tasks": dict,
    "metrics": dict,
}
IO_METRICS = {
    **{f: int for f in ("read-bytes", "write-bytes", "read-records", "write-records")},
    **{
        f"{f}-complete": bool
        for f in ("read-bytes", "write-bytes", "read-records", "write-records")
    },
    "accumulated-backpressured-time": int,
    "accumulated-idle-time": int,
    "accumulated-busy-time": NUMBER,
}
SUBTASK = {
    "subtask": int,
    "status": str,
    "attempt": int,
    "endpoint": str,
    "start-time": int,
    "end-time": int,
    "duration": int,
    "metrics": dict,
    "taskmanager-id": str,
    "status-duration": dict,
    "other-concurrent-attempts": list,
}
VERTEX_DETAILS = {
    "id": str,
    "name": str,
    "parallelism": int,
    "maxParallelism": int,
    "now": int,
    "subtasks": list,
    "aggregated": dict,
}
STATISTICS = dict.fromkeys(("min", "max", "avg", "sum", "median", "p25", "p75", "p95"), int)
RESOURCE_PROFILE = {
    "cpuCores": NUMBER,
    "taskHeapMemory": int,
    "taskOffHeapMemory": int,
    "managedMemory": int,
    "networkMemory": int,
    "extendedResources": dict,
}
TASK_MANAGER_INFO = {
    "id": str,
    "path": str,
    "dataPort": int,
    "jmxPort": int,
    "timeSinceLastHeartbeat": int,
    "slotsNumber": int,
    "freeSlots": int,
    "assignedTasks": int,
    "totalResource": dict,
    "freeResource": dict,
    "hardware": dict,
    "memoryConfiguration": dict,
    "blocked": NULLABLE,
}
HARDWARE = dict.fromkeys(("cpuCores", "physicalMemory", "freeMemory", "managedMemory"), int)
MEMORY_CONFIGURATION = dict.fromkeys(
    (
        "frameworkHeap",
        "taskHeap",
        "frameworkOffHeap",
        "taskOffHeap",
        "networkMemory",
        "managedMemory",
        "jvmMetaspace",
        "jvmOverhead",
        "totalFlinkMemory",
        "totalProcessMemory",
    ),
    int,
)
TASK_MANAGER_METRICS = {
    **dict.fromkeys(
        (f"{pool}{part}" for pool in ("heap", "nonHeap") for part in ("Used", "Committed", "Max")),
        int,
    ),
    **dict.fromkeys(
        (f"{pool}{part}" for pool in ("direct", "mapped") for part in ("Count", "Used", "Max")),
        int,
    ),
    **dict.fromkeys(
        (
            f"nettyShuffleMemory{kind}{part}"
            for kind in ("Segments", "")
            for part in ("Available", "Used", "Total")
        ),
        int,
    ),
    "garbageCollectors": list,
}
CHECKPOINT_STATISTICS = {
    "id": int,
    "status": str,
    "is_savepoint": bool,
    "savepointFormat": NULLABLE,
    "trigger_timestamp": int,
    "latest_ack_timestamp": int,
    "checkpointed_size": int,
    "state_size": int,
    "end_to_end_duration": int,
    "alignment_buffered": int,
    "processed_data": int,
    "persisted_data": int,
    "num_subtasks": int,
    "num_acknowledged_subtasks": int,
    "checkpoint_type": str,
    "tasks": dict,
}
TASK_CHECKPOINT_STATISTICS = {
    "id": int,
    "status": str,
    **dict.fromkeys(
        (
            "latest_ack_timestamp",
            "checkpointed_size",
            "state_size",
            "end_to_end_duration",
            "alignment_buffered",
            "processed_data",
            "persisted_data",
            "num_subtasks",
            "num_acknowledged_subtasks",
        ),
        int,
    ),
}
STATS_SUMMARY = {
    **dict.fromkeys(("min", "max", "avg"), int),
    **dict.fromkeys(("p50", "p90", "p95", "p99", "p999"), NUMBER),
}
EXCEPTION_ENTRY = {
    "exceptionName": str,
    "stacktrace": str,
    "timestamp": int,
    "failureLabels": dict,
    "taskName": NULLABLE,
    "endpoint": NULLABLE,
    "taskManagerId": NULLABLE,
    "concurrentExceptions": list,
}


def check(body: Mapping[str, Any], spec: Mapping[str, Any], what: str) -> None:
    """Every field of ``spec`` is in ``body``; those with a type hold a value of it."""
    for name, kind in spec.items():
        assert name in body, f"{what} lacks {name!r}: {json.dumps(body)[:400]}"
        if kind is NULLABLE:
            continue
        value = body[name]
        assert value is not None, f"{what}: {name!r} is null, a primitive in Flink's class"
        assert isinstance(value, kind), f"{what}: {name!r} is {value!r}, not {kind}"


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        body = response.read().decode()
        kind = response.headers["Content-Type"]
    return json.loads(body) if kind.startswith("application/json") else body


def status_of(url: str, method: str = "GET", data: bytes | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=180) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


KEYED_SUM = """
import sys

from weir.common import Types, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

env = StreamExecutionEnvironment.get_execution_environment()
env.enable_checkpointing(200)
env.get_checkpoint_config().set_checkpoint_storage_dir(sys.argv[2])
(
    env.from_source(NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "n")
    .map(lambda v: (v % 4, v))
    .key_by(lambda t: t[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
    .uid("sum")
    .filter(lambda v: False)
    .print()
)
env.execute(sys.argv[1])
"""


@pytest.fixture(scope="module")
def checkpointed_job(mini_cluster, tmp_path_factory) -> Iterator[tuple[str, str]]:
    """A running keyed job at parallelism 1 with a checkpoint every 200 ms and a
    completed checkpoint: (REST URL, job id); cancelled at the end."""
    from weir.core.executor import register_executor

    storage = tmp_path_factory.mktemp("shapes-checkpoints")
    register_executor(mini_cluster.executor())
    try:
        env = StreamExecutionEnvironment.get_execution_environment(Configuration())
        env.set_parallelism(1)
        env.enable_checkpointing(200)
        env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{storage}")
        (
            env.from_source(
                NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
            )
            .map(lambda v: (v % 4, v), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
            .key_by(lambda t: t[0])
            .reduce(lambda a, b: (a[0], a[1] + b[1]))
            .uid("sum")
            .filter(lambda t: False)
            .print()
        )
        job_id = str(env.execute_async("flink shapes").get_job_id())
    finally:
        register_executor(None)
    url = mini_cluster.rest_url
    await_condition(
        lambda: get(f"{url}/jobs/{job_id}/checkpoints")["counts"]["completed"] > 0,
        "a completed checkpoint",
        timeout=120,
    )
    yield url, job_id
    urllib.request.urlopen(urllib.request.Request(f"{url}/jobs/{job_id}", method="PATCH"))
    await_condition(
        lambda: get(f"{url}/jobs/{job_id}")["state"] == "CANCELED", "the job to be cancelled"
    )


class TestJobs:
    def test_the_job_list_has_what_flinks_cli_reads(self, checkpointed_job):
        url, job_id = checkpointed_job
        jobs = get(f"{url}/jobs/overview")["jobs"]
        for job in jobs:
            check(job, JOB_DETAILS, "a /jobs/overview entry")
        assert job_id in [j["jid"] for j in jobs]
        check(get(f"{url}/overview"), CLUSTER_OVERVIEW, "/overview")

    def test_a_job_with_its_vertices(self, checkpointed_job):
        url, job_id = checkpointed_job
        job = get(f"{url}/jobs/{job_id}")
        check(job, JOB_DETAILS_INFO, "/jobs/{id}")
        assert job["application-id"] == job_id and job["job-type"] == "STREAMING"
        for vertex in job["vertices"]:
            check(vertex, JOB_VERTEX, "a vertex of /jobs/{id}")
            check(vertex["metrics"], IO_METRICS, "a vertex's metrics")

    def test_a_vertex_its_subtasks_and_their_aggregates(self, checkpointed_job):
        url, job_id = checkpointed_job
        for vertex in get(f"{url}/jobs/{job_id}")["vertices"]:
            base = f"{url}/jobs/{job_id}/vertices/{vertex['id']}"
            details = get(base)
            check(details, VERTEX_DETAILS, "/vertices/{id}")
            (row,) = details["subtasks"]
            check(row, SUBTASK, "a subtask")
            check(row["metrics"], IO_METRICS, "a subtask's metrics")
            assert row["other-concurrent-attempts"] == []
            assert row["status-duration"]["RUNNING"] >= 0
            for name in ("read-records", "write-records", "accumulated-busy-time"):
                check(details["aggregated"]["metrics"][name], STATISTICS, name)
            check(details["aggregated"]["status-duration"]["RUNNING"], STATISTICS, "RUNNING")
            check(get(f"{base}/subtasks/0"), SUBTASK, "/subtasks/0")
            tms = get(f"{base}/taskmanagers")["taskmanagers"]
            assert [t["taskmanager-id"] for t in tms] == [row["taskmanager-id"]]
            assert "aggregated" in tms[0] and "status-counts" in tms[0]
            times = get(f"{base}/subtasktimes")
            assert [s["subtask"] for s in times["subtasks"]] == [0]
            assert get(f"{base}/accumulators") == {"id": vertex["id"], "user-accumulators": []}
            assert get(f"{base}/subtasks/accumulators")["subtasks"][0]["subtask"] == 0
            assert get(f"{base}/flamegraph") == {"endTimestamp": -2, "data": None}
        code, body = status_of(f"{base}/subtasks/7")
        assert code == 404 and "subtask" in body["errors"][0]

    def test_subtask_metrics_aggregated_as_the_graph_reads_them(self, checkpointed_job):
        """The dashboard's graph shows busy and back-pressured time from these (it showed
        N/A while they were a 404)."""
        url, job_id = checkpointed_job
        source = get(f"{url}/jobs/{job_id}")["vertices"][0]
        base = f"{url}/jobs/{job_id}/vertices/{source['id']}/subtasks/metrics"
        # The subtask's first metrics reach the master with its TaskManager's next fetch.
        names = await_condition(lambda: [m["id"] for m in get(base)], "the subtask's first metrics")
        assert "busyTimeMsPerSecond" in names and "numRecordsOut" in names
        wanted = "backPressuredTimeMsPerSecond,busyTimeMsPerSecond,numRecordsOut"

        def counted() -> list[dict[str, Any]]:
            answer = get(f"{base}?get={wanted}")
            out = next((m for m in answer if m["id"] == "numRecordsOut"), None)
            return answer if out is not None and out["sum"] > 0 else []

        answer = await_condition(counted, "records out of the source")
        assert {m["id"] for m in answer} == set(wanted.split(","))
        for metric in answer:
            assert set(metric) == {"id", "min", "max", "avg", "sum", "skew"}
            assert metric["min"] <= metric["avg"] <= metric["max"]
        (only_max,) = get(f"{base}?get=numRecordsOut&agg=max")
        assert set(only_max) == {"id", "max"}
        code, body = status_of(f"{base}?get=numRecordsOut&agg=median")
        assert code == 400 and "median" in body["errors"][0]

    def test_the_job_application(self, checkpointed_job):
        url, job_id = checkpointed_job
        (app,) = [
            a for a in get(f"{url}/applications/overview")["applications"] if a["id"] == job_id
        ]
        assert app["status"] == "RUNNING" and app["jobs"] == {"RUNNING": 1}
        details = get(f"{url}/applications/{job_id}")
        assert [j["jid"] for j in details["jobs"]] == [job_id]
        check(details["jobs"][0], JOB_DETAILS, "an application's job")
        assert get(f"{url}/applications/{job_id}/exceptions") == {
            "exceptionHistory": {"entries": []}
        }
        assert get(f"{url}/jobs/{job_id}/accumulators")["user-task-accumulators"] == []


class TestCheckpoints:
    def test_statistics_details_and_subtasks(self, checkpointed_job):
        url, job_id = checkpointed_job
        stats = get(f"{url}/jobs/{job_id}/checkpoints")
        check(
            stats["counts"],
            dict.fromkeys(("restored", "total", "in_progress", "completed", "failed"), int),
            "counts",
        )
        for name in ("checkpointed_size", "state_size", "end_to_end_duration", "persisted_data"):
            check(stats["summary"][name], STATS_SUMMARY, f"summary {name}")
        completed = stats["latest"]["completed"]
        check(completed, CHECKPOINT_STATISTICS, "latest completed")
        assert completed["is_savepoint"] is False and completed["savepointFormat"] is None
        for entry in stats["history"]:
            check(entry, CHECKPOINT_STATISTICS, "a history entry")

        details = get(f"{url}/jobs/{job_id}/checkpoints/details/{completed['id']}")
        check(details, CHECKPOINT_STATISTICS, "/checkpoints/details/{id}")
        vertices = [v["id"] for v in get(f"{url}/jobs/{job_id}")["vertices"]]
        assert sorted(details["tasks"]) == sorted(vertices)
        for task in details["tasks"].values():
            check(task, TASK_CHECKPOINT_STATISTICS, "a vertex of a checkpoint")
            assert task["num_acknowledged_subtasks"] == task["num_subtasks"] == 1
        subtasks = get(
            f"{url}/jobs/{job_id}/checkpoints/details/{completed['id']}/subtasks/{vertices[0]}"
        )
        check(subtasks, TASK_CHECKPOINT_STATISTICS, "/checkpoints/details/{id}/subtasks/{v}")
        check(subtasks["summary"]["end_to_end_duration"], STATS_SUMMARY, "its summary")
        assert [s["index"] for s in subtasks["subtasks"]] == [0]
        assert subtasks["subtasks"][0]["status"] == "completed"
        code, body = status_of(f"{url}/jobs/{job_id}/checkpoints/details/999999")
        assert code == 404 and "999999" in body["errors"][0]

    def test_a_savepoint_is_shown_and_a_job_restored_from_it_says_so(
        self, checkpointed_job, tmp_path
    ):
        url, job_id = checkpointed_job
        code, trigger = status_of(
            f"{url}/jobs/{job_id}/savepoints",
            "POST",
            json.dumps({"target-directory": f"file://{tmp_path / 'sp'}"}).encode(),
        )
        assert code == 202

        def completed() -> Any:
            answer = get(f"{url}/jobs/{job_id}/savepoints/{trigger['request-id']}")
            return answer["operation"] if answer["status"]["id"] == "COMPLETED" else None

        location = await_condition(completed, "the savepoint", timeout=120)["location"]
        savepoint = get(f"{url}/jobs/{job_id}/checkpoints")["latest"]["savepoint"]
        check(savepoint, CHECKPOINT_STATISTICS, "latest savepoint")
        assert savepoint["is_savepoint"] is True and savepoint["savepointFormat"] == "CANONICAL"
        assert savepoint["external_path"] == location
        assert savepoint["checkpoint_type"] == "SAVEPOINT"

        # The dashboard's "Submit New Job": upload, then run from the savepoint.
        code, uploaded = _post_file(f"{url}/jars/upload", "keyed_sum.py", KEYED_SUM.encode())
        assert code == 200 and uploaded["status"] == "success"
        (jar,) = [f for f in get(f"{url}/jars")["files"] if f["name"] == "keyed_sum.py"]
        plan = get(f"{url}/jars/{jar['id']}/plan?programArg=plan,file:///unused")["plan"]
        assert next(n["description"] for n in plan["nodes"]).startswith("Source: n")
        run = {
            "programArgs": f"'restored sum' file://{tmp_path / 'chk'}",
            "parallelism": 1,
            "savepointPath": location,
            # The savepoint's source and map have ids of a graph this job does not have.
            "allowNonRestoredState": True,
        }
        code, answer = status_of(f"{url}/jars/{jar['id']}/run", "POST", json.dumps(run).encode())
        assert code == 200, answer
        restored_id = answer["jobid"]
        assert get(f"{url}/jobs/{restored_id}")["name"] == "restored sum"

        def restored() -> Any:
            return get(f"{url}/jobs/{restored_id}/checkpoints")["latest"]["restored"]

        latest = await_condition(restored, "the job to restore its savepoint", timeout=120)
        check(
            latest,
            {"id": int, "restore_timestamp": int, "is_savepoint": bool, "external_path": str},
            "latest restored",
        )
        assert latest["is_savepoint"] is True and latest["restore_timestamp"] > 0
        assert latest["id"] == savepoint["id"]
        code, _ = status_of(f"{url}/jars/{jar['id']}", "DELETE")
        assert code == 200
        assert jar["id"] not in [f["id"] for f in get(f"{url}/jars")["files"]]


def test_only_python_job_files_are_accepted_for_upload(mini_cluster):
    code, body = _post_file(f"{mini_cluster.rest_url}/jars/upload", "job.jar", b"PK\x03\x04")
    assert code == 400 and "only .py files are accepted" in body["errors"][0]


def test_a_failed_job_shows_its_exception_as_flink_2_does(cluster):
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_string("restart-strategy.type", "none")
    )
    env.set_parallelism(1)

    def explode(value: int) -> int:
        raise ValueError(f"no good: {value}")

    env.from_collection([1, 2, 3], Types.INT()).map(explode, output_type=Types.INT()).print()
    job_id = str(env.execute_async("failing shapes").get_job_id())
    url = cluster.rest_url
    await_condition(lambda: get(f"{url}/jobs/{job_id}")["state"] == "FAILED", "the job to fail")
    answer = get(f"{url}/jobs/{job_id}/exceptions?maxExceptions=10")
    (entry,) = answer["exceptionHistory"]["entries"]
    check(entry, EXCEPTION_ENTRY, "an exception history entry")
    assert "no good: 1" in entry["stacktrace"] and entry["exceptionName"] == "ValueError"
    assert "no good: 1" in answer["root-exception"]
    assert isinstance(answer["timestamp"], int) and answer["timestamp"] > 0
    (app_entry,) = get(f"{url}/applications/{job_id}/exceptions")["exceptionHistory"]["entries"]
    assert app_entry["jobId"] == job_id


class TestTaskManagers:
    def test_the_list_and_one_with_its_metrics(self, checkpointed_job):
        url, _ = checkpointed_job
        tms = get(f"{url}/taskmanagers")["taskmanagers"]
        assert tms
        for tm in tms:
            check(tm, TASK_MANAGER_INFO, "a /taskmanagers entry")
            check(tm["totalResource"], RESOURCE_PROFILE, "totalResource")
            check(tm["hardware"], HARDWARE, "hardware")
            check(tm["memoryConfiguration"], MEMORY_CONFIGURATION, "memoryConfiguration")
            assert tm["blocked"] is False
        busy = max(tms, key=lambda t: t["assignedTasks"])
        assert busy["assignedTasks"] >= 1

        def with_metrics() -> Any:
            one = get(f"{url}/taskmanagers/{busy['id']}")
            return one if one["metrics"]["heapUsed"] > 0 else None

        one = await_condition(with_metrics, "the TaskManager's first metrics")
        check(one["metrics"], TASK_MANAGER_METRICS, "a TaskManager's metrics")
        assert one["allocatedSlots"] and one["allocatedSlots"][0]["jobId"]
        wanted = "Status.JVM.Memory.Heap.Used,Status.JVM.Memory.Heap.Max,Status.JVM.Threads.Count"
        values = {
            m["id"]: m["value"]
            for m in get(f"{url}/taskmanagers/{busy['id']}/metrics?get={wanted}")
        }
        assert set(values) == set(wanted.split(","))
        assert int(values["Status.JVM.Threads.Count"]) > 1

    def test_the_time_of_the_last_heartbeat_is_a_timestamp(self, checkpointed_job):
        """Flink's ``timeSinceLastHeartbeat`` holds the heartbeat's time, not an age (the
        dashboard showed 1970)."""
        url, _ = checkpointed_job
        before = get(f"{url}/jobs/overview")["jobs"][0]["start-time"]
        for tm in get(f"{url}/taskmanagers")["taskmanagers"]:
            assert tm["timeSinceLastHeartbeat"] > before > 1_600_000_000_000

    def test_log_files_thread_dump_and_profiler(self, checkpointed_job):
        url, _ = checkpointed_job
        tm_id = get(f"{url}/taskmanagers")["taskmanagers"][0]["id"]
        logs = get(f"{url}/taskmanagers/{tm_id}/logs")["logs"]
        assert "taskmanager.log" in [f["name"] for f in logs]
        assert all(isinstance(f["size"], int) and f["mtime"] > 0 for f in logs)
        assert isinstance(get(f"{url}/taskmanagers/{tm_id}/logs/taskmanager.log"), str)
        code, body = status_of(f"{url}/taskmanagers/{tm_id}/logs/..%2Fsecret")
        assert code in (400, 404) and body["errors"]
        (thread,) = get(f"{url}/taskmanagers/{tm_id}/thread-dump")["threadInfos"]
        assert "py-spy" in thread["stringifiedThreadInfo"]
        assert get(f"{url}/taskmanagers/{tm_id}/profiler") == {"profilingList": []}


class TestJobManager:
    def test_config_environment_metrics_and_thread_dump(self, checkpointed_job, mini_cluster):
        url, _ = checkpointed_job
        config = {e["key"]: e["value"] for e in get(f"{url}/jobmanager/config")}
        assert config["rest.port"] == mini_cluster.config["rest.port"]
        environment = get(f"{url}/jobmanager/environment")
        assert environment["jvm"]["version"].startswith("CPython") and environment["classpath"]
        names = [m["id"] for m in get(f"{url}/jobmanager/metrics")]
        assert "Status.JVM.Memory.Heap.Used" in names and "numRegisteredTaskManagers" in names
        assert any(n.startswith("Status.JVM.GarbageCollector.") for n in names)
        (heap,) = get(f"{url}/jobmanager/metrics?get=Status.JVM.Memory.Heap.Used")
        assert int(heap["value"]) > 0
        threads = get(f"{url}/jobmanager/thread-dump")["threadInfos"]
        assert any(t["threadName"] == "weir-rest" for t in threads)
        assert get(f"{url}/jobmanager/profiler") == {"profilingList": []}

    def test_a_master_without_a_log_file_answers_as_flink_does(self, checkpointed_job):
        url, _ = checkpointed_job  # the MiniCluster is started by no script: no log file
        code, body = status_of(f"{url}/jobmanager/log")
        assert code == 404 and body == {"errors": ["File not found."]}
        assert get(f"{url}/jobmanager/logs") == {"logs": []}


def test_the_openapi_description_gives_metric_lists_as_arrays(mini_cluster):
    spec = get(f"{mini_cluster.rest_url}/openapi.json")
    schemas = spec["components"]["schemas"]
    assert schemas["Metrics"]["type"] == "array"
    for path in (
        "/jobs/{jobid}/vertices/{vertexid}/metrics",
        "/jobs/{jobid}/vertices/{vertexid}/watermarks",
        "/taskmanagers/{taskmanagerid}/metrics",
        "/jobmanager/metrics",
    ):
        answer = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
        assert answer["schema"] == {"$ref": "#/components/schemas/Metrics"}, path
    status = spec["paths"]["/jobs/{jobid}/savepoints/{triggerid}"]["get"]["responses"]["200"]
    schema = status["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/SavepointStatus"}
    operation = schemas["SavepointStatus"]["properties"]["operation"]
    assert operation == {"$ref": "#/components/schemas/SavepointInfo"}  # one schema, not two
    for path in (
        "/applications/overview",
        "/jars",
        "/jobmanager/config",
        "/jobs/{jobid}/checkpoints/details/{checkpointid}",
    ):
        assert "get" in spec["paths"][path], path
