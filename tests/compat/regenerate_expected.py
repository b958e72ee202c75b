"""Regenerate tests/compat/expected/ by running every program under programs/ on PyFlink.

Needs a Python environment with apache-flink installed (and Java), e.g.:

    python3 -m venv /tmp/pyflink && /tmp/pyflink/bin/pip install apache-flink==2.3.0
    PATH=/tmp/pyflink/bin:$PATH python tests/compat/regenerate_expected.py

PyFlink starts its Python workers with the ``python`` found on PATH, hence the PATH.
The expected outputs are PyFlink's own stdout, unedited.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent


def main() -> int:
    import pyflink  # noqa: F401  (fail early when PyFlink is not installed)

    names = sys.argv[1:] or sorted(p.stem for p in (HERE / "programs").glob("p*.py"))
    for name in names:
        program = HERE / "programs" / f"{name}.py"
        result = subprocess.run(
            [sys.executable, str(program)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=program.parent,
        )
        if result.returncode != 0:
            print(f"{name}: PyFlink failed\n{result.stderr[-3000:]}", file=sys.stderr)
            return 1
        (HERE / "expected" / f"{name}.out").write_text(result.stdout)
        print(f"{name}: {len(result.stdout.splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
