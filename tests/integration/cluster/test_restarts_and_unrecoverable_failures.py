"""What an attached ``weir run`` shows of a job's failures, on the shared MiniCluster: each
restart as it happens (the attempt and the first line of its cause), and a failure no
restart can cure (a class the job cannot import) ending the job at once, whatever its
restart strategy allows."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway

pytestmark = pytest.mark.spark

_RESTARTS = """\
config = Configuration()
config.set_string("restart-strategy.type", "fixed-delay")
config.set_string("restart-strategy.fixed-delay.attempts", "5")
config.set_string("restart-strategy.fixed-delay.delay", "0 ms")
env = StreamExecutionEnvironment.get_execution_environment(config)
env.set_parallelism(1)
"""

_FAILS_ONCE = (
    """\
import os
import sys

from weir.common import Configuration
from weir.datastream import StreamExecutionEnvironment

MARKER = sys.argv[1]


def fail_once(x):
    # The first attempt fails; the restarted one finds the marker and goes on.
    if not os.path.exists(MARKER):
        open(MARKER, "w").close()
        raise RuntimeError("the first attempt fails on purpose\\nthis line is not shown")
    return x

"""
    + _RESTARTS
    + """
env.from_collection([1, 2, 3]).map(fail_once).name("Fail once").print()
env.execute("fails once")
"""
)

# A module the client has (as an installed package would be: by reference, not shipped)
# and the TaskManagers do not.
_IMPORTS_WHAT_WORKERS_LACK = (
    """\
import importlib.machinery
import sys
import types

from weir.common import Configuration
from weir.datastream import StreamExecutionEnvironment

lib = types.ModuleType("weir_test_only_on_the_client")
lib.__spec__ = importlib.machinery.ModuleSpec(lib.__name__, None)
exec("def double(x):\\n    return 2 * x\\n", lib.__dict__)
sys.modules[lib.__name__] = lib

"""
    + _RESTARTS
    + """
env.from_collection([1, 2, 3]).map(lib.double).name("Double").print()
env.execute("needs a module the workers lack")
"""
)

_RESTART_LINE = re.compile(r"^Job ([0-9a-f]{32}) is restarting \(attempt (\d+)\) after: (.*)$")


def _run_attached(cluster, capsys, tmp_path: Path, program: str, *args: str):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(program))
    code = cli.main(["run", "-m", cluster.address, str(job), *args])
    out, err = capsys.readouterr()
    job_id = re.search(r"JobID ([0-9a-f]{32})", out).group(1)  # type: ignore[union-attr]
    restarts = [m.groups() for m in map(_RESTART_LINE.match, err.splitlines()) if m]
    return code, job_id, restarts, err


def test_an_attached_run_shows_each_restart_with_its_attempt_and_cause(cluster, capsys, tmp_path):
    code, job_id, restarts, err = _run_attached(
        cluster, capsys, tmp_path, _FAILS_ONCE, str(tmp_path / "failed-once")
    )
    assert code == 0, err
    ((restarted_job, attempt, cause),) = restarts
    assert (restarted_job, attempt) == (job_id, "1"), err
    # The failed task (its chain's name) and the first line of what it raised.
    assert "Fail once" in cause
    assert cause.endswith("(1/1) failed: RuntimeError: the first attempt fails on purpose")
    assert "this line is not shown" not in err


def test_a_class_the_job_cannot_import_fails_it_at_once_despite_its_restart_strategy(
    cluster, capsys, tmp_path
):
    code, job_id, restarts, err = _run_attached(
        cluster, capsys, tmp_path, _IMPORTS_WHAT_WORKERS_LACK
    )
    assert code == 1
    assert restarts == [], err
    assert "No module named 'weir_test_only_on_the_client'" in err
    with DispatcherGateway(cluster.address) as gateway:
        details = gateway.job_details(job_id)
    assert details.status == "FAILED"
    assert [t.attempt_number for t in details.tasks] == [0]  # never restarted
    (entry,) = details.exception_history
    assert entry.non_recoverable
    assert not entry.restarted
    assert "UserCodeImportError" in entry.failure_cause
