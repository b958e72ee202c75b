"""yarn-session.sh when there is nothing to start: its help needs no Hadoop configuration,
and a session YARN refuses (an unknown queue, more memory than a container may have) ends
in one line with YARN's reason and where spark-submit's full output is, on Hadoop's own
minicluster."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import sys

import pytest
from yarn_sessions import BIN, SessionClient


def test_help_needs_no_hadoop_configuration(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}
    env.update(WEIR_CONF_DIR=str(tmp_path), WEIR_PYTHON=sys.executable)
    for flag in ("--help", "-h"):
        result = subprocess.run(
            [str(BIN / "yarn-session.sh"), flag],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("usage: "), result.stdout
        assert "yarn-session" in result.stdout.splitlines()[0]
        for option in ("-qu", "-jm", "-tm", "-id", "HADOOP_CONF_DIR"):
            assert option in result.stdout
        assert result.stderr == ""


@pytest.mark.parametrize(
    ("flags", "reasons"),
    [
        (("-qu", "nosuch"), ["unknown queue: nosuch"]),
        pytest.param(
            ("-jm", "20g"),
            ["AM memory", "above the max threshold", "maximum-allocation-mb"],
            marks=pytest.mark.long,  # one refusal is in make test, the others in test-long
        ),
        pytest.param(
            ("-tm", "20g"),
            ["executor memory", "above the max threshold", "maximum-allocation-mb"],
            marks=pytest.mark.long,
        ),
    ],
    ids=["unknown-queue", "master-memory", "taskmanager-memory"],
)
def test_a_session_yarn_refuses_ends_in_one_line_with_the_reason_and_the_log(
    hadoop, tmp_path, flags: tuple[str, ...], reasons: list[str]
) -> None:
    client = SessionClient(hadoop, tmp_path / "client")
    args = client.session_args("-d")
    # The flag under test comes last: it wins over the defaults of session_args.
    result = client.run_yarn_session(*args, *flags)

    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    (line,) = lines
    assert line.startswith("error: the YARN session was not started: "), line
    for reason in reasons:
        assert reason in line
    log = client.log_dir / f"weir-{getpass.getuser()}-yarn-session-{socket.gethostname()}.log"
    assert line.endswith(f"(spark-submit's full output: {log})")
    # The whole story, stack trace included, is in the log, and only there.
    full = log.read_text()
    assert "Exception in thread" in full
    assert "\tat org.apache.spark" in full
    assert reasons[0] in full
    assert not list((client.root / "props").iterdir())  # no properties file names a session


@pytest.fixture(autouse=True)
def _no_session_left(request):
    """A failed test must not leave its application holding the minicluster's memory."""
    if "hadoop" not in request.fixturenames:
        yield
        return
    hadoop = request.getfixturevalue("hadoop")
    before = {a["id"] for a in hadoop.applications("RUNNING,ACCEPTED")}
    yield
    from weir.client.yarn_client import YarnRestClient

    yarn = YarnRestClient(hadoop.rm_webapp)
    for app in hadoop.applications("RUNNING,ACCEPTED"):
        if app["id"] not in before:
            yarn.kill(app["id"])
