"""Run a program against a running Weir cluster, as ``weir run -m ADDRESS`` does, but with
nothing printed of its own: the program's stdout is what the compat suite compares.

    python run_on_cluster.py HOST:PORT [-Dkey=value ...] program.py

``-Dkey=value`` sets a configuration entry under the program's own, as a cluster's
configuration file does for ``weir run`` (Flink's ``-D``).
"""

from __future__ import annotations

import runpy
import sys

from weir.client.executor import RemoteExecutor
from weir.core.executor import register_executor, set_context_configuration


def main() -> None:
    address, *options, program = sys.argv[1:]
    entries = {}
    for option in options:
        key, sep, value = option.removeprefix("-D").partition("=")
        if not option.startswith("-D") or not sep:
            sys.exit(f"expected -Dkey=value before the program; got {option!r}")
        entries[key] = value
    set_context_configuration(entries)
    # attach_stdout: the TaskManagers print to this process's stdout, as in embedded runs.
    register_executor(RemoteExecutor(address, attach_stdout=True))
    sys.argv = [program]
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
