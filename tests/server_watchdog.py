"""One test server for every process of a run (pytest-xdist's workers): the first worker
that needs it starts it through this module run as a script, a watchdog, and the others
join it; each registers its pid in the run's ``users/``, and the watchdog stops the
server once none of those processes is alive (``SharedMinio``, ``SharedKafka``).

    python server_watchdog.py USERS_DIR COMMAND...
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

SCRIPT = __file__


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the run's lock file ``path`` (made if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def register(users: Path) -> None:
    """Count this process among the server's users."""
    users.mkdir(parents=True, exist_ok=True)
    (users / str(os.getpid())).touch()


def unregister(users: Path) -> None:
    (users / str(os.getpid())).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def watch(users: Path, command: list[str]) -> int:
    """Run ``command`` until no process registered in ``users`` is alive."""
    server = subprocess.Popen(command)
    try:
        while server.poll() is None:
            time.sleep(1.0)  # how often the users are counted; ending late costs nothing
            pids = [int(p.name) for p in users.glob("*") if p.name.isdigit()]
            if not any(_alive(pid) for pid in pids):
                break
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(watch(Path(sys.argv[1]), sys.argv[2:]))
