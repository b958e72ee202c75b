"""PyFlink programs, run with only their imports changed from ``pyflink`` to ``weir``,
print what PyFlink printed (``expected/``, produced by PyFlink 2.3 itself through
``regenerate_expected.py``).

Lines printed by parallel subtasks interleave differently from run to run, in PyFlink
as here, so outputs are compared as multisets of lines. Where PyFlink itself spreads
records at random (a rebalance starts at a random subtask), the program's first line
says ``# partitioning: random`` and the ``N> `` subtask prefixes are left out of the
comparison. Keyed streams are placed exactly as PyFlink places them, prefixes included.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import forked_client
import pytest

HERE = pathlib.Path(__file__).resolve().parent
PROGRAMS = sorted(p.stem for p in (HERE / "programs").glob("p*.py"))

pytestmark = pytest.mark.spark

RUNNER = HERE / "run_on_cluster.py"
# Run as a user runs them, `python job.py` with an embedded MiniCluster of their own (a
# SparkContext each, so only a few): the plainest program and print() inside user functions.
# The others submit to one shared cluster from a fresh client process; make test-long also
# runs embedded a job whose restart strategy restarts it and one that configures the
# environment from a Configuration.
EMBEDDED = {"p01_word_count_print", "p39_print_in_udf"}
EMBEDDED_LONG = {"p54_env_configure", "p56_checkpoint_restart"}


# Programs whose feature comes with another issue: expected to fail until it lands, strictly,
# so that a program passing again fails here until its entry goes.
PENDING: dict[str, str] = {}


def _with_pending(names: list[str]) -> list[object]:
    return [
        pytest.param(n, marks=pytest.mark.xfail(reason=PENDING[n], strict=True))
        if n in PENDING
        else n
        for n in names
    ]


# Programs run once more with keyed state in rocksdb (``state.backend.type``, set as a
# cluster's configuration would): the broadcast ones, whose broadcast state stays on the heap
# beside it as Flink keeps operator state, and whose keyed state, timers and
# apply_to_keyed_state must print the same on either backend; the keys of TUPLE and ROW
# types, whose state rocksdb finds by their key group; and BATCH keyed operators whose key
# groups the decided parallelism sets.
ROCKSDB_PROGRAMS = [
    p
    for p in PROGRAMS
    if p.startswith(("p201_", "p202_", "p203_", "p204_", "p309_", "p310_", "p314_"))
]


def as_weir(source: str) -> str:
    return re.sub(r"\bpyflink\b", "weir", source)


def _client_env() -> dict[str, str]:
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "WEIR_LOG_LEVEL": "ERROR"}


def _check_output(name: str, source: str, stdout: str) -> None:
    expected = (HERE / "expected" / f"{name}.out").read_text().splitlines()
    got = stdout.splitlines()
    if source.startswith("# partitioning: random"):
        expected, got = _unprefixed(expected), _unprefixed(got)
    assert sorted(got) == sorted(expected)


@pytest.mark.parametrize(
    "name",
    sorted(EMBEDDED) + [pytest.param(n, marks=pytest.mark.long) for n in sorted(EMBEDDED_LONG)],
)
def test_embedded_program_prints_what_pyflink_prints(name, tmp_path):
    source = (HERE / "programs" / f"{name}.py").read_text()
    script = tmp_path / f"{name}.py"
    script.write_text(as_weir(source))
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=_client_env(),
    )
    assert result.returncode == 0, result.stderr[-4000:]
    _check_output(name, source, result.stdout)


@pytest.mark.parametrize("name", _with_pending([p for p in PROGRAMS if p not in EMBEDDED]))
def test_program_prints_what_pyflink_prints(name, tmp_path, compat_cluster):
    _run_on_cluster(name, tmp_path, compat_cluster.address, [])


@pytest.mark.parametrize("name", ROCKSDB_PROGRAMS)
def test_program_on_rocksdb_prints_what_pyflink_prints(name, tmp_path, compat_cluster):
    root = tmp_path / "state"
    options = ["-Dstate.backend.type=rocksdb", f"-Dtaskmanager.state.local.root-dirs={root}"]
    _run_on_cluster(name, tmp_path, compat_cluster.address, options)
    # The keyed operators' databases were made there (and deleted with the job).
    assert (root / "weir-rocksdb").is_dir() == (name != "p201_broadcast_process_function")


def _run_on_cluster(name: str, tmp_path: pathlib.Path, address: str, options: list[str]) -> None:
    source = (HERE / "programs" / f"{name}.py").read_text()
    script = tmp_path / f"{name}.py"
    script.write_text(as_weir(source))
    result = forked_client.run(
        [str(RUNNER), address, *options, str(script)],
        cwd=tmp_path,
        env=_client_env(),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    _check_output(name, source, result.stdout)


def _unprefixed(lines: list[str]) -> list[str]:
    return [re.sub(r"^((?:[^:>\s]+:)?)\d+> ", r"\1", line) for line in lines]


def test_output_redirected_to_a_file_keeps_every_line(tmp_path):
    """``python job.py > out.txt``: the TaskManagers append to the file the client writes,
    so neither overwrites the other, and what the client printed before submitting comes
    first."""
    name = "p31_job_client_and_settings"
    script = tmp_path / f"{name}.py"
    script.write_text(as_weir((HERE / "programs" / f"{name}.py").read_text()))
    out = tmp_path / "out.txt"
    env = _client_env()
    with out.open("w") as stdout:
        result = subprocess.run(
            [sys.executable, str(script)],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env=env,
        )
    assert result.returncode == 0, result.stderr[-4000:]
    expected = (HERE / "expected" / f"{name}.out").read_text().splitlines()
    got = out.read_text().splitlines()
    assert sorted(got) == sorted(expected)
    before_submit = expected.index("domain TimeDomain.EVENT_TIME") + 1
    assert got[:before_submit] == expected[:before_submit]
