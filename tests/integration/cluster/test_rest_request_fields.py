"""The REST API reads each field of a request as Flink's request bodies declare it: a
boolean is JSON's true or false, a string a JSON string without NUL characters, a number
a whole number. Anything else is answered 400 with Flink's ``{"errors": [...]}``, naming
the field, what came and what to send, and leaves the job and the cluster running. The
Dispatcher's gRPC face refuses a savepoint directory with a NUL character, or of no
filesystem it knows, as clearly."""

from __future__ import annotations

import json
import textwrap
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from test_checkpoint_recovery import await_condition

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, WatermarkStrategy
from weir.core.errors import ConfigurationError
from weir.core.executor import register_executor
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark


def _call(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=180) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _state(url: str, job_id: str) -> str:
    return _call(f"{url}/jobs/{job_id}")[1]["state"]


def _await_operation(url: str, job_id: str, trigger_id: str) -> dict[str, Any]:
    def completed() -> Any:
        _, answer = _call(f"{url}/jobs/{job_id}/savepoints/{trigger_id}")
        return answer["operation"] if answer["status"]["id"] == "COMPLETED" else None

    return await_condition(completed, "the savepoint operation to complete", timeout=120)


@pytest.fixture(scope="module")
def checkpointed_job(mini_cluster) -> Iterator[tuple[str, str]]:
    """An unbounded job with checkpointing, at parallelism 1 (the REST tests' running job
    holds two of the cluster's three slots): (REST URL, job id); cancelled at the end."""
    register_executor(mini_cluster.executor())
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    env.enable_checkpointing(200)
    (
        env.from_source(
            NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .filter(lambda v: False)
        .print()
    )
    job_id = str(env.execute_async("request fields").get_job_id())
    register_executor(None)
    url = mini_cluster.rest_url
    await_condition(
        lambda: _call(f"{url}/jobs/{job_id}/checkpoints")[1]["counts"]["completed"] > 0,
        "a completed checkpoint",
    )
    yield url, job_id
    _call(f"{url}/jobs/{job_id}", "PATCH")
    await_condition(lambda: _state(url, job_id) == "CANCELED", "the job to be cancelled")


@pytest.mark.parametrize(
    ("action", "fields", "says"),
    [
        ("savepoints", {"cancel-job": "false"}, '"cancel-job" must be true or false'),
        ("savepoints", {"cancel-job": 0}, '"cancel-job" must be true or false'),
        ("savepoints", {"target-directory": 12345}, '"target-directory" must be a string'),
        ("savepoints", {"target-directory": ["/tmp"]}, '"target-directory" must be a string'),
        ("savepoints", {"target-directory": "/tmp/a\u0000b"}, '"target-directory" holds a NUL'),
        ("stop", {"drain": "false"}, '"drain" must be true or false'),
        ("stop", {"drain": 1}, '"drain" must be true or false'),
        ("stop", {"targetDirectory": 12345}, '"targetDirectory" must be a string'),
        ("stop", {"targetDirectory": "/tmp/a\u0000b"}, '"targetDirectory" holds a NUL'),
    ],
)
def test_a_savepoint_request_with_a_field_of_the_wrong_kind_is_refused_and_the_job_runs_on(
    checkpointed_job, tmp_path, action, fields, says
):
    url, job_id = checkpointed_job
    # The directory is a real one: a request that was not refused would take the savepoint
    # (and, read loosely, cancel or stop the job).
    directory = {"savepoints": "target-directory", "stop": "targetDirectory"}[action]
    code, answer = _call(
        f"{url}/jobs/{job_id}/{action}", "POST", {directory: str(tmp_path), **fields}
    )
    assert code == 400, answer
    (message,) = answer["errors"]
    assert says in message, message
    assert _state(url, job_id) == "RUNNING"
    assert not list(tmp_path.iterdir())  # no savepoint was taken


def test_a_savepoint_request_with_json_booleans_and_null_is_taken_and_the_job_runs_on(
    checkpointed_job, tmp_path
):
    url, job_id = checkpointed_job
    for fields in ({"cancel-job": False}, {"cancel-job": None}, {}):
        body = {"target-directory": str(tmp_path), **fields}
        code, trigger = _call(f"{url}/jobs/{job_id}/savepoints", "POST", body)
        assert code == 202, trigger
        operation = _await_operation(url, job_id, trigger["request-id"])
        assert "failure-cause" not in operation, operation
        assert _state(url, job_id) == "RUNNING"


def test_the_dispatcher_refuses_a_savepoint_directory_it_cannot_use_saying_why(
    mini_cluster, checkpointed_job
):
    url, job_id = checkpointed_job
    gateway = DispatcherGateway(mini_cluster.address)
    try:
        with pytest.raises(ConfigurationError, match=r"savepoint directory .* NUL character"):
            gateway.trigger_savepoint(job_id, "/tmp/a\x00b")
        with pytest.raises(ConfigurationError, match=r"savepoint directory .* NUL character"):
            gateway.trigger_savepoint(job_id, "/tmp/a\x00b", stop=True)
        with pytest.raises(ConfigurationError, match=r"'nosuchfs://sp'.*Protocol not known"):
            gateway.trigger_savepoint(job_id, "nosuchfs://sp")
    finally:
        gateway.close()
    assert _state(url, job_id) == "RUNNING"


_JOB_FILE = textwrap.dedent(
    """
    from weir.common import Types
    from weir.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3], type_info=Types.INT()).map(lambda v: v * v).print()
    env.execute("squares")
    """
)


def _upload(url: str, name: str, content: bytes, *, encoded_name: bool = False) -> tuple[int, Any]:
    """POST ``content`` as an uploaded job file called ``name`` (``encoded_name``: given
    percent-encoded, as RFC 5987's ``filename*``)."""
    boundary = "weir-test-boundary"
    filename = f"filename*=UTF-8''{name}" if encoded_name else f'filename="{name}"'
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="jarfile"; '
            f"{filename}\r\nContent-Type: text/x-python\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        f"{url}/jars/upload",
        data=body,
        method="POST",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def uploaded_job_file(mini_cluster) -> Iterator[tuple[str, str]]:
    """(REST URL, id) of an uploaded job file; deleted at the end."""
    url = mini_cluster.rest_url
    code, answer = _upload(url, "squares.py", _JOB_FILE.encode())
    assert code == 200, answer
    (jar,) = [f for f in _call(f"{url}/jars")[1]["files"] if f["name"] == "squares.py"]
    yield url, jar["id"]
    _call(f"{url}/jars/{jar['id']}", "DELETE")


@pytest.mark.parametrize(
    ("query", "fields", "says"),
    [
        ("", {"parallelism": True}, '"parallelism" must be a whole number'),
        ("", {"parallelism": 1.5}, '"parallelism" must be a whole number'),
        ("", {"parallelism": "two"}, '"parallelism" must be a whole number'),
        ("", {"parallelism": [1]}, '"parallelism" must be a whole number'),
        ("", {"programArgs": 5}, '"programArgs" must be a string'),
        ("", {"programArgs": "--in a\u0000b"}, '"programArgs" holds a NUL'),
        ("", {"programArgsList": "--in x"}, '"programArgsList" must be an array of strings'),
        ("", {"programArgsList": ["--n", 2]}, '"programArgsList" must be an array of strings'),
        ("", {"programArgsList": ["a\u0000"]}, '"programArgsList" holds a NUL'),
        ("", {"savepointPath": 7}, '"savepointPath" must be a string'),
        ("", {"savepointPath": "/sp\u0000"}, '"savepointPath" holds a NUL'),
        ("", {"allowNonRestoredState": "false"}, '"allowNonRestoredState" must be true or false'),
        ("allowNonRestoredState=yes", {}, "allowNonRestoredState='yes' must be true or false"),
        ("parallelism=1.5", {}, "parallelism='1.5' must be a whole number"),
        ("savepointPath=%2Fsp%00", {}, "savepointPath holds a NUL"),
        ("programArg=a%00b", {}, "programArg holds a NUL"),
    ],
)
def test_a_job_file_request_with_a_field_of_the_wrong_kind_is_refused(
    uploaded_job_file, query, fields, says
):
    url, jar_id = uploaded_job_file
    for action in ("plan", "run"):  # the plan is tried first: a job that would run
        code, answer = _call(f"{url}/jars/{jar_id}/{action}?{query}", "POST", fields)
        assert code == 400, answer
        (message,) = answer["errors"]
        assert says in message, message


def test_a_job_file_request_takes_what_flinks_dashboard_sends(uploaded_job_file):
    url, jar_id = uploaded_job_file
    # The dashboard sends its parallelism as the text of its input field.
    for fields in ({"parallelism": "2"}, {"parallelism": 2, "allowNonRestoredState": False}):
        code, answer = _call(f"{url}/jars/{jar_id}/plan", "POST", fields)
        assert code == 200, answer
        assert answer["plan"]["nodes"][-1]["parallelism"] == 2  # the map (the source: 1)


def test_an_upload_whose_file_name_holds_a_nul_character_is_refused(mini_cluster):
    url = mini_cluster.rest_url
    code, answer = _upload(url, "job\u0000.py", _JOB_FILE.encode())  # a raw NUL in its header
    assert code == 400 and "multipart body cannot be read" in answer["errors"][0], answer
    code, answer = _upload(url, "job%00.py", _JOB_FILE.encode(), encoded_name=True)
    assert code == 400 and "the file name holds a NUL" in answer["errors"][0], answer


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b'{"target-directory": "\xff"}', "not text in utf-8"),
        (b'{"target-directory": ', "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nests its JSON too deeply"),
    ],
    ids=["not-utf-8", "cut-short", "deep"],
)
def test_a_body_that_cannot_be_read_as_json_is_refused(checkpointed_job, raw, says):
    url, job_id = checkpointed_job
    request = urllib.request.Request(
        f"{url}/jobs/{job_id}/savepoints",
        data=raw,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=60)
    assert info.value.code == 400
    assert says in json.loads(info.value.read())["errors"][0]
    assert _state(url, job_id) == "RUNNING"


def test_a_log_file_name_with_a_nul_character_is_refused(checkpointed_job):
    url, _ = checkpointed_job  # a job holds a TaskManager
    task_manager = _call(f"{url}/taskmanagers")[1]["taskmanagers"][0]["id"]
    code, answer = _call(f"{url}/taskmanagers/{task_manager}/logs/taskmanager.log%00.txt")
    assert code == 400, answer
    assert "not a log file name" in answer["errors"][0], answer
