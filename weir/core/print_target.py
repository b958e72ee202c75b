"""Where ``print()`` of a task goes when its client asked for it: the client's stdout,
through ``/proc/<pid>/fd/<n>``, which only works on the client's own host.

The client sends the path with the identity of its host (``host_identity``); a
TaskManager follows it only when it runs on that host (same boot, same network
namespace). Elsewhere, what tasks print goes to the TaskManager's ``taskmanager.out``,
as in Flink, where a remote client never sees it either.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

_SEPARATOR = "|"


@functools.cache
def host_identity() -> str:
    """This host's boot and network namespace: equal only for processes that share both
    (a network namespace is a host of its own to the tests that build clusters of them)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        netns = os.stat("/proc/self/ns/net").st_ino
    except OSError:  # not Linux: no /proc paths to follow either
        return ""
    return f"{boot}:{netns}"


def encode_print_target(path: str) -> str:
    return f"{host_identity()}{_SEPARATOR}{path}"


def local_print_target(value: str | None) -> str | None:
    """The path to print to, if ``value`` came from a client on this host that still
    runs; else None (the task prints to the TaskManager's own output)."""
    if not value:
        return None
    identity, sep, path = value.partition(_SEPARATOR)
    if not sep or not identity or identity != host_identity() or not os.path.exists(path):
        return None
    return path
