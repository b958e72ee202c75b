"""What a process holds (threads, file descriptors, gRPC channels): reported by each
TaskManager with its heartbeats, so that leaks show from outside the process."""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ProcessStatus:
    threads: int
    open_fds: int
    grpc_channels: int  # -1 if unknown


def current_process_status() -> ProcessStatus:
    """This process's counts now."""
    try:
        open_fds = len(os.listdir("/proc/self/fd"))
    except OSError:
        open_fds = -1
    return ProcessStatus(threading.active_count(), open_fds, grpc_channel_count())


def grpc_channel_count() -> int:
    """Open gRPC client channels of this process (gRPC's channelz registry), -1 if this
    gRPC cannot say. A channel counts until it is closed (or collected)."""
    try:
        # The grpcio-channelz package is a thin wrapper around this same call.
        from grpc._cython import cygrpc  # noqa: PLC0415 (optional, private to grpcio)
    except ImportError:
        return -1
    count, start = 0, 0
    try:
        while True:
            page = json.loads(cygrpc.channelz_get_top_channels(start))
            channels = page.get("channel", [])
            count += len(channels)
            if page.get("end", False) or not channels:
                return count
            start = int(channels[-1]["ref"]["channelId"]) + 1
    except (AttributeError, ValueError, KeyError):
        logger.debug("gRPC's channelz registry could not be read", exc_info=True)
        return -1
