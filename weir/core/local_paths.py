"""Local paths a job carries, made absolute where the job is built.

A relative path in a job (a FileSink's base path, a checkpoint directory) means the
directory the program runs in. The processes that use it run elsewhere: the JobMaster in
the master's directory, a task on a thread whose current directory is its job's own on
the TaskManager. So the client resolves such paths when it builds the job; URLs
(``file://...``, ``s3://...``, ``memory://...``) are passed as they are.
"""

from __future__ import annotations

import os


def absolute_local_path(path: str) -> str:
    """``path`` made absolute against this process's current directory, unless it is a URL."""
    return path if "://" in path else os.path.abspath(path)
