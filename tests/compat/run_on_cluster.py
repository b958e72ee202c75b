"""Run a program against a running Weir cluster, as ``weir run -m ADDRESS`` does, but with
nothing printed of its own: the program's stdout is what the compat suite compares.

    python run_on_cluster.py HOST:PORT program.py
"""

from __future__ import annotations

import runpy
import sys

from weir.client.executor import RemoteExecutor
from weir.core.executor import register_executor


def main() -> None:
    address, program = sys.argv[1], sys.argv[2]
    # attach_stdout: the TaskManagers print to this process's stdout, as in embedded runs.
    register_executor(RemoteExecutor(address, attach_stdout=True))
    sys.argv = [program]
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
