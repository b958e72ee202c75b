"""PipelineExecutors: submit a JobGraph to a Dispatcher (a remote cluster or the MiniCluster)."""

from __future__ import annotations

import dataclasses
import fcntl
import logging
import os
import stat
import sys

from weir.client.dispatcher_client import DispatcherGateway, LeaderLookup
from weir.client.job_client import ClusterJobClient
from weir.core.job_graph import JobGraph
from weir.core.job_graph_codec import encode_job_graph
from weir.core.print_target import encode_print_target
from weir.core.security import SecurityConfig

PRINT_TARGET_KEY = "weir.internal.print-target"

logger = logging.getLogger(__name__)


def client_stdout_path() -> str | None:
    """A path through which TaskManagers on this machine append to the client's stdout,
    so ``print()`` output of an embedded run shows where the user ran the job.

    When stdout is a file (``python job.py > out.txt``), it is switched to append mode:
    the client writes at its own offset otherwise, over the lines the TaskManagers
    appended. What the client printed so far goes out first."""
    try:
        sys.stdout.flush()
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        fd = 1
    path = f"/proc/{os.getpid()}/fd/{fd}"
    if not os.path.exists(path):
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_APPEND)
    except OSError as exc:  # the TaskManagers' lines may then be overwritten
        logger.warning(
            "could not put stdout in append mode (%s); print() output of "
            "the job may overwrite the client's",
            exc,
        )
    return path


class RemoteExecutor:
    """Submits to the Dispatcher at ``address`` (``weir run -m host:port``), or to the
    leader ``leader`` finds (high availability), following it when it changes."""

    def __init__(
        self,
        address: str | None,
        attach_stdout: bool = False,
        leader: LeaderLookup | None = None,
        security: SecurityConfig | None = None,
    ) -> None:
        self.address = address
        self._attach_stdout = attach_stdout
        self._leader = leader
        self._security = security
        self._gateway: DispatcherGateway | None = None

    @property
    def gateway(self) -> DispatcherGateway:
        if self._gateway is None:
            self._gateway = DispatcherGateway(self.address, self._leader, self._security)
        return self._gateway

    def submit(self, job_graph: JobGraph) -> ClusterJobClient:
        if self._attach_stdout:
            target = client_stdout_path()
            if target is not None:
                job_graph = dataclasses.replace(
                    job_graph,
                    config={**job_graph.config, PRINT_TARGET_KEY: encode_print_target(target)},
                )
        job_id = self.gateway.submit_job(encode_job_graph(job_graph))
        return ClusterJobClient(self.gateway, job_id)
