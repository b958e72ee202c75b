"""Instructions per event of the per-record path, counted by callgrind: q1 (source -> map
-> sink, one Task) and the keyed count (source Task -> key-group edge -> keyed state
count -> sink, p=1), as ``chain_throughput.py`` runs them.

Each is run at two sizes under ``valgrind --tool=callgrind``; the difference of the two
totals over the difference of the events is the cost of one event, without the
interpreter's start-up and imports. Instruction counts do not depend on the machine's
load, so two commits compare on a busy machine where their rates would not.

Run: ``.venv/bin/python benchmarks/instruction_counts.py [--small N] [--large N]``
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def _instructions(query: str, events: int) -> int:
    """Instructions callgrind counted for one run of ``query`` over ``events`` bids."""
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import chain_throughput as c; "
        f"c.task_q1({events}) if {query!r} == 'q1' else c.task_keyed({events}, 1)"
    )
    with tempfile.TemporaryDirectory(prefix="weir-callgrind-") as out:
        result = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}/callgrind.out",
                sys.executable,
                "-c",
                code,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    found = re.search(r"Collected : (\d+)", result.stderr)
    if found is None:
        msg = f"no instruction count in callgrind's output:\n{result.stderr[-2000:]}"
        raise RuntimeError(msg)
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=120_000)
    args = parser.parse_args()
    for query in ("q1", "keyed"):
        small = _instructions(query, args.small)
        large = _instructions(query, args.large)
        per_event = (large - small) / (args.large - args.small)
        print(f"{query:6s} {per_event:>10,.0f} instructions per event", flush=True)


if __name__ == "__main__":
    main()
