"""Reading a Weir master's log in tests: the TaskManager leases its ResourceManager
started, and when a milestone was logged (by the log's own timestamps, to the
millisecond). Figures only: no test waits on, or asserts, a duration."""

from __future__ import annotations

import datetime as dt
import re

_LEASE = re.compile(r"leasing a TaskManager: lease (\w+)")
_STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*?"


def leases(text: str) -> list[str]:
    """The lease ids the ResourceManager started, in order."""
    return _LEASE.findall(text)


def logged_at(text: str, pattern: str, after: float = 0.0) -> float | None:
    """When the first line matching ``pattern`` at or after ``after`` (seconds since the
    epoch) was logged; None if there is none."""
    for match in re.finditer(_STAMP + pattern, text, re.MULTILINE):
        stamp = dt.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if stamp >= after:
            return stamp
    return None


def all_running_at(text: str, attempt: int, after: float = 0.0) -> float | None:
    """When every task of job attempt ``attempt`` was RUNNING, as the JobMaster logs it."""
    return logged_at(text, rf"every task of attempt {attempt} is RUNNING", after)
