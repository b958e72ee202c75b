"""Flink's REST API, Prometheus endpoints and user metrics of the MiniCluster, against a
real unbounded job: shapes as Flink documents them, counts that grow, errors as
``{"errors": [...]}`` with Flink's status codes, cancel through PATCH."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_checkpoint_recovery import await_condition

from weir.common import Configuration, Types, WatermarkStrategy
from weir.datastream import MapFunction, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark


class CountingMap(MapFunction):
    """Counts what it sees in a user counter of a user group; a meter and a
    distribution too, and a gauge of the last value."""

    def open(self, runtime_context):
        group = runtime_context.get_metrics_group().add_group("mygroup")
        self.seen = group.counter("seen")
        self.rate = group.meter("rate")
        self.sizes = group.distribution("sizes")
        self.last = 0
        group.gauge("last", lambda: self.last)

    def map(self, value):
        self.seen.inc()
        self.rate.mark_event()
        self.sizes.update(value % 100)
        self.last = value
        return (value % 8, 1)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.headers["Content-Type"].startswith("application/json")
        return json.loads(response.read())


def _error(url: str, method: str = "GET") -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, method=method)
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=30)
    return info.value.code, json.loads(info.value.read())


def _scrape(address: str) -> dict[str, list[Any]]:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as response:
        text = response.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


@pytest.fixture(scope="module")
def running_job(mini_cluster) -> Iterator[tuple[str, str]]:
    """An unbounded keyed job at parallelism 2: (REST URL, job id); cancelled at the end."""
    from weir.core.executor import register_executor

    register_executor(mini_cluster.executor())
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(2)
    (
        env.from_source(
            NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .map(CountingMap(), output_type=Types.TUPLE([Types.LONG(), Types.INT()]))
        .key_by(lambda t: t[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .filter(lambda t: False)
        .print()
    )
    client = env.execute_async("rest api job")
    register_executor(None)
    job_id = str(client.get_job_id())
    url = mini_cluster.rest_url

    def all_running():
        job = _get(f"{url}/jobs/{job_id}")
        return job["state"] == "RUNNING" and all(v["status"] == "RUNNING" for v in job["vertices"])

    await_condition(all_running, "every vertex of the job to run")
    yield url, job_id
    request = urllib.request.Request(f"{url}/jobs/{job_id}", method="PATCH")
    urllib.request.urlopen(request, timeout=30)
    await_condition(
        lambda: _get(f"{url}/jobs/{job_id}")["state"] == "CANCELED", "the job to be cancelled"
    )


class TestClusterEndpoints:
    def test_config_and_overview(self, running_job):
        url, _ = running_job
        config = _get(f"{url}/config")
        assert config["refresh-interval"] > 0
        assert {"web-submit", "web-cancel"} <= set(config["features"])
        overview = _get(f"{url}/overview")
        assert overview["taskmanagers"] >= 2
        assert overview["slots-total"] >= overview["slots-available"] >= 0
        assert overview["jobs-running"] >= 1
        assert _get(f"{url}/v1/overview")["taskmanagers"] == overview["taskmanagers"]

    def test_task_managers_with_their_spark_executor(self, running_job):
        url, _ = running_job
        tms = _get(f"{url}/taskmanagers")["taskmanagers"]
        assert tms
        for tm in tms:
            assert {"id", "path", "dataPort", "slotsNumber", "freeSlots", "hardware"} <= set(tm)

        def details_with_metrics():
            # Asked afresh each time: on a loaded machine a TaskManager may be lost and
            # replaced meanwhile (404 for the old id), and its first metrics fetch may
            # not have answered yet (no values to show until one has).
            for tm in _get(f"{url}/taskmanagers")["taskmanagers"]:
                try:
                    one = _get(f"{url}/taskmanagers/{tm['id']}")
                except urllib.error.HTTPError as error:
                    if error.code != 404:
                        raise
                    continue
                if one["metrics"]["residentMemory"] > 0:
                    return one
            return None

        one = await_condition(details_with_metrics, "a TaskManager's details with its metrics")
        assert "spark task" in one["sparkExecutorId"]
        assert one["host"] == "127.0.0.1"
        code, body = _error(f"{url}/taskmanagers/nosuchtaskmanager")
        assert code == 404 and "nosuchtaskmanager" in body["errors"][0]

    def test_task_manager_log_files(self, running_job, mini_cluster):
        url, _ = running_job
        tm_id = _get(f"{url}/taskmanagers")["taskmanagers"][0]["id"]
        with urllib.request.urlopen(f"{url}/taskmanagers/{tm_id}/log", timeout=30) as response:
            assert response.headers["Content-Type"].startswith("text/plain")
            served = response.read().decode()
        # What is served is the end of that TaskManager's own log file (the shared cluster's
        # logs roll over, so the file may have moved on to taskmanager.log.1 since).
        last_line = served.strip().splitlines()[-1]
        files = Path(mini_cluster.config["env.log.dir"], f"taskmanager-{tm_id}").glob("*.log*")
        assert any(last_line in f.read_text(errors="replace") for f in files)
        with urllib.request.urlopen(f"{url}/taskmanagers/{tm_id}/stdout", timeout=30) as response:
            assert response.status == 200

    def test_openapi_describes_what_is_served(self, running_job):
        url, _ = running_job
        spec = _get(f"{url}/openapi.json")
        assert spec["openapi"].startswith("3.")
        for path in (
            "/overview",
            "/jobs/{jobid}",
            "/jobs/{jobid}/vertices/{vertexid}/backpressure",
            "/taskmanagers/{taskmanagerid}/log",
        ):
            assert "get" in spec["paths"][path]
        assert "patch" in spec["paths"]["/jobs/{jobid}"]
        assert "post" in spec["paths"]["/jobs/{jobid}/savepoints"]

    def test_errors_are_flink_shaped(self, running_job):
        url, _ = running_job
        code, body = _error(f"{url}/jobs/{'0' * 32}")
        assert code == 404 and "0" * 32 in body["errors"][0]
        code, body = _error(f"{url}/jobs/not-a-job-id")
        assert code == 400 and "32 hex digits" in body["errors"][0]
        code, body = _error(f"{url}/no/such/path")
        assert code == 404 and body == {"errors": ["Not found: /no/such/path"]}
        code, body = _error(f"{url}/overview", method="DELETE")
        assert code == 405 and body["errors"]


class TestJobEndpoints:
    def test_jobs_and_overview(self, running_job):
        url, job_id = running_job
        assert {"id": job_id, "status": "RUNNING"} in _get(f"{url}/jobs")["jobs"]

        def entry():
            (found,) = [j for j in _get(f"{url}/jobs/overview")["jobs"] if j["jid"] == job_id]
            return found

        assert entry()["name"] == "rest api job"
        assert entry()["tasks"]["total"] == 4
        # A loaded machine may restart a task meanwhile: wait for all four to run.
        await_condition(lambda: entry()["tasks"]["running"] == 4, "four running tasks")

    def test_job_vertices_count_records_that_grow(self, running_job):
        url, job_id = running_job
        job = _get(f"{url}/jobs/{job_id}")
        assert job["state"] == "RUNNING" and job["job-type"] == "STREAMING"
        source, keyed = job["vertices"]
        assert source["name"].startswith("Source: numbers") and "Map" in source["name"]
        assert source["parallelism"] == 2 and source["tasks"]["RUNNING"] == 2
        for field in ("read-records", "write-records", "read-bytes", "write-bytes"):
            assert field in source["metrics"] and f"{field}-complete" in source["metrics"]
        before = source["metrics"]["write-records"], keyed["metrics"]["read-records"]

        def grown():
            later = _get(f"{url}/jobs/{job_id}")["vertices"]
            return (
                later[0]["metrics"]["write-records"] > before[0]
                and later[1]["metrics"]["read-records"] > before[1]
                and later[1]["metrics"]["read-bytes"] > 0
            )

        await_condition(grown, "records out of the source and into the reduce to grow")

    def test_plan_config_and_exceptions(self, running_job):
        url, job_id = running_job
        plan = _get(f"{url}/jobs/{job_id}/plan")["plan"]
        assert plan["jid"] == job_id
        source, keyed = plan["nodes"]
        assert "inputs" not in source
        assert keyed["inputs"] == [
            {"num": 0, "id": source["id"], "ship_strategy": "HASH", "exchange": "pipelined_bounded"}
        ]
        config = _get(f"{url}/jobs/{job_id}/config")
        assert config["jid"] == job_id and "execution-config" in config
        exceptions = _get(f"{url}/jobs/{job_id}/exceptions")
        assert exceptions["root-exception"] is None
        assert exceptions["exceptionHistory"] == {"entries": [], "truncated": False}

    def test_checkpoints_of_a_job_without_checkpointing(self, running_job):
        url, job_id = running_job
        checkpoints = _get(f"{url}/jobs/{job_id}/checkpoints")
        assert checkpoints["counts"] == {
            "restored": 0,
            "total": 0,
            "in_progress": 0,
            "completed": 0,
            "failed": 0,
        }
        assert set(checkpoints["latest"]) == {"completed", "savepoint", "failed", "restored"}
        assert checkpoints["history"] == []
        config = _get(f"{url}/jobs/{job_id}/checkpoints/config")
        assert config["mode"] == "exactly_once" and config["state_backend"] == "hashmap"

    def test_vertex_subtasks_back_pressure_and_watermarks(self, running_job):
        url, job_id = running_job
        for vertex in _get(f"{url}/jobs/{job_id}")["vertices"]:
            base = f"{url}/jobs/{job_id}/vertices/{vertex['id']}"
            details = _get(base)
            assert [s["subtask"] for s in details["subtasks"]] == [0, 1]
            assert all(
                s["status"] == "RUNNING" and s["taskmanager-id"] for s in details["subtasks"]
            )
            bp = _get(f"{base}/backpressure")
            assert bp["status"] == "ok" and bp["backpressure-level"] in ("ok", "low", "high")
            for row in bp["subtasks"]:
                assert 0.0 <= row["ratio"] <= 1.0
                assert row["backpressure-level"] in ("ok", "low", "high")
            marks = _get(f"{base}/watermarks")
            assert [m["id"] for m in marks] == [
                "0.currentInputWatermark",
                "1.currentInputWatermark",
            ]
        code, body = _error(f"{url}/jobs/{job_id}/vertices/nosuchvertex")
        assert code == 404 and "nosuchvertex" in body["errors"][0]

    def test_a_savepoint_that_cannot_be_taken_fails_its_operation_and_leaves_the_job(
        self, running_job, tmp_path
    ):
        url, job_id = running_job  # no checkpointing: savepoints cannot be taken
        trigger = _post(f"{url}/jobs/{job_id}/savepoints", {"target-directory": str(tmp_path)})
        operation = _await_operation(url, job_id, trigger["request-id"])
        assert "location" not in operation and operation["failure-cause"]["stack-trace"]
        assert _get(f"{url}/jobs/{job_id}")["state"] == "RUNNING"
        code, body = _error(f"{url}/jobs/{job_id}/savepoints/{'0' * 32}")
        assert code == 404 and "0" * 32 in body["errors"][0]
        code, body = _error(f"{url}/jobs/{'1' * 32}/savepoints", method="POST")
        assert code == 404 and "1" * 32 in body["errors"][0]


def _post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 202
        return json.loads(response.read())


def _await_operation(url: str, job_id: str, trigger_id: str) -> dict[str, Any]:
    def completed():
        answer = _get(f"{url}/jobs/{job_id}/savepoints/{trigger_id}")
        return answer["operation"] if answer["status"]["id"] == "COMPLETED" else None

    return await_condition(completed, "the savepoint operation to complete", timeout=120)


def test_savepoint_then_stop_with_savepoint_through_rest(cluster, tmp_path):
    """POST /jobs/{id}/savepoints leaves the job running with a savepoint the reader
    opens; POST /jobs/{id}/stop takes another and ends the job FINISHED, as Flink's."""
    from weir.state import read_savepoint

    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)  # the module's running job holds two of the three slots
    env.enable_checkpointing(200)
    (
        env.from_source(
            NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .key_by(lambda v: v % 4)
        .reduce(lambda a, b: a + b)
        .uid("sum")
        .filter(lambda v: False)
        .print()
    )
    job_id = str(env.execute_async("rest savepoints").get_job_id())
    url = cluster.rest_url
    await_condition(
        lambda: _get(f"{url}/jobs/{job_id}/checkpoints")["counts"]["completed"] > 0,
        "a completed checkpoint",
    )

    trigger = _post(f"{url}/jobs/{job_id}/savepoints", {"target-directory": str(tmp_path / "a")})
    operation = _await_operation(url, job_id, trigger["request-id"])
    assert "failure-cause" not in operation, operation
    assert operation["location"].startswith(f"file://{tmp_path / 'a'}/savepoint-")
    assert read_savepoint(operation["location"]).operator("sum").parallelism == 1
    assert _get(f"{url}/jobs/{job_id}")["state"] == "RUNNING"

    trigger = _post(f"{url}/jobs/{job_id}/stop", {"targetDirectory": str(tmp_path / "b")})
    operation = _await_operation(url, job_id, trigger["request-id"])
    assert "failure-cause" not in operation, operation
    assert operation["location"].startswith(f"file://{tmp_path / 'b'}/savepoint-")
    assert (Path(operation["location"].removeprefix("file://")) / "_metadata").is_file()
    await_condition(
        lambda: _get(f"{url}/jobs/{job_id}")["state"] == "FINISHED", "the job to be stopped"
    )


class TestMetrics:
    def test_user_metrics_reach_the_rest_api_and_prometheus(self, running_job, mini_cluster):
        url, job_id = running_job
        source = _get(f"{url}/jobs/{job_id}")["vertices"][0]
        names = [m["id"] for m in _get(f"{url}/jobs/{job_id}/vertices/{source['id']}/metrics")]
        assert "0.Map.mygroup.seen" in names and "1.numRecordsOut" in names
        values = _get(f"{url}/jobs/{job_id}/vertices/{source['id']}/metrics?get=0.Map.mygroup.seen")
        assert int(values[0]["value"]) > 0

        def seen_in_prometheus():
            total = 0.0
            for tm in _get(f"{url}/taskmanagers")["taskmanagers"]:
                families = _scrape(tm["prometheusAddress"])
                samples = families.get("flink_taskmanager_job_task_operator_mygroup_seen", [])
                total += sum(s.value for s in samples if s.labels["job_id"] == job_id)
            return total > 0

        await_condition(seen_in_prometheus, "the user counter in the TaskManagers' scrape")

    def test_task_managers_expose_task_metrics_for_prometheus(self, running_job):
        url, _ = running_job
        tm = _get(f"{url}/taskmanagers")["taskmanagers"][0]
        families = _scrape(tm["prometheusAddress"])
        for name in (
            "numRecordsIn",
            "numRecordsOut",
            "numRecordsInPerSecond",
            "numRecordsOutPerSecond",
            "numBytesIn",
            "numBytesOut",
            "busyTimeMsPerSecond",
            "backPressuredTimeMsPerSecond",
            "idleTimeMsPerSecond",
            "currentInputWatermark",
            "currentOutputWatermark",
            "numLateRecordsDropped",
            "inputQueueLength",
            "outputQueueLength",
        ):
            samples = families[f"flink_taskmanager_job_task_{name}"]
            labels = samples[0].labels
            assert {"job_id", "task_name", "subtask_index", "tm_id", "task_attempt_id"} <= set(
                labels
            )
        assert families["flink_taskmanager_Status_Python_Memory_RSS"][0].value > 0
        assert "flink_taskmanager_Status_Shuffle_Netty_UsedMemorySegments" in families

    def test_the_master_exposes_job_metrics_for_prometheus(self, running_job, mini_cluster):
        _, job_id = running_job
        families = _scrape(mini_cluster.prometheus_address)
        for name in (
            "numRestarts",
            "uptime",
            "lastCheckpointDuration",
            "lastCheckpointSize",
            "numberOfCompletedCheckpoints",
            "numberOfFailedCheckpoints",
        ):
            (sample,) = [
                s for s in families[f"flink_jobmanager_job_{name}"] if s.labels["job_id"] == job_id
            ]
            assert sample.labels["job_name"] == "rest api job"
        uptime = [
            s for s in families["flink_jobmanager_job_uptime"] if s.labels["job_id"] == job_id
        ]
        assert uptime[0].value > 0
        assert families["flink_jobmanager_numRegisteredTaskManagers"][0].value >= 2


_SUBMITTED_JOB = """
import sys

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

name, out = sys.argv[1], sys.argv[2]
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection(list(range(10)), Types.INT()).map(
    lambda x: x * x, output_type=Types.INT()
).add_sink(lambda x: open(out, "a").write(f"{x}\\n"))
env.execute(name)
"""


def _post_file(url: str, filename: str, content: bytes) -> tuple[int, dict[str, Any]]:
    """POST ``content`` as the multipart field ``jobfile``; (status, JSON answer)."""
    boundary = "weir-test-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="jobfile"; '
            f'filename="{filename}"\r\nContent-Type: text/x-python\r\n\r\n'
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=180) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class TestJobSubmission:
    def test_a_job_file_posted_to_jobs_runs_to_the_end(self, running_job, tmp_path):
        url, _ = running_job
        out = tmp_path / "squares.txt"
        query = urllib.parse.urlencode({"programArg": f"posted job,{out}"})
        status, body = _post_file(f"{url}/jobs?{query}", "squares.py", _SUBMITTED_JOB.encode())
        assert status == 202, body
        job_url = body["jobUrl"]
        job_id = job_url.rsplit("/", 1)[-1]
        assert job_url == f"/jobs/{job_id}" and len(job_id) == 32
        assert job_id in [j["id"] for j in _get(f"{url}/jobs")["jobs"]]
        await_condition(
            lambda: _get(f"{url}{job_url}")["state"] == "FINISHED", "the posted job to finish"
        )
        assert _get(f"{url}{job_url}")["name"] == "posted job"
        assert sorted(int(line) for line in out.read_text().split()) == [x * x for x in range(10)]

    def test_a_job_file_that_fails_is_refused_with_its_error(self, running_job):
        url, _ = running_job
        status, body = _post_file(f"{url}/jobs", "broken.py", b"raise ValueError('no job here')")
        assert status == 400
        assert "broken.py did not submit a job" in body["errors"][0]
        assert "no job here" in body["errors"][0]
        status, body = _post_file(f"{url}/jobs", "empty.py", b"x = 1\n")
        assert status == 400 and "did not submit a job" in body["errors"][0]
        request = urllib.request.Request(f"{url}/jobs", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=30)
        assert info.value.code == 400 and "jobfile" in json.loads(info.value.read())["errors"][0]
        # The cluster goes on: the running job still runs.
        assert _get(f"{url}/overview")["jobs-running"] >= 1


def test_a_finished_job_keeps_its_vertices_record_counts(cluster):
    """Once a job's tasks end their TaskManagers report them no more: the counts they
    ended with travel with their final state, and /jobs/{id} shows them (Flink's
    archived IOMetrics)."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    (
        env.from_source(NumberSequenceSource(1, 1234), WatermarkStrategy.no_watermarks(), "n")
        .key_by(lambda v: v % 3)
        .filter(lambda v: v % 2 == 0)
        .print()
    )
    job_id = str(env.execute("counted to the end").get_job_id())
    url = cluster.rest_url
    job = _get(f"{url}/jobs/{job_id}")
    assert job["state"] == "FINISHED"
    source, keyed = job["vertices"]
    assert source["metrics"]["write-records"] == 1234
    assert source["metrics"]["write-records-complete"] is True
    assert keyed["metrics"]["read-records"] == 1234
    assert keyed["metrics"]["read-bytes"] > 0
    (row,) = _get(f"{url}/jobs/{job_id}/vertices/{keyed['id']}")["subtasks"]
    assert row["status"] == "FINISHED" and row["metrics"]["read-records"] == 1234
