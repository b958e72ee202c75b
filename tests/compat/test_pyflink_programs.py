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

import pytest

HERE = pathlib.Path(__file__).resolve().parent
PROGRAMS = sorted(p.stem for p in (HERE / "programs").glob("p*.py"))

pytestmark = pytest.mark.spark


def as_weir(source: str) -> str:
    return re.sub(r"\bpyflink\b", "weir", source)


@pytest.mark.parametrize("name", PROGRAMS)
def test_program_prints_what_pyflink_prints(name, tmp_path):
    source = (HERE / "programs" / f"{name}.py").read_text()
    script = tmp_path / f"{name}.py"
    script.write_text(as_weir(source))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "WEIR_LOG_LEVEL": "ERROR"}
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    expected = (HERE / "expected" / f"{name}.out").read_text().splitlines()
    got = result.stdout.splitlines()
    if source.startswith("# partitioning: random"):
        expected, got = _unprefixed(expected), _unprefixed(got)
    assert sorted(got) == sorted(expected)


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
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "WEIR_LOG_LEVEL": "ERROR"}
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
