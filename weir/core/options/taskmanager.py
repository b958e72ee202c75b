"""TaskManager and network keys: slots, memory, buffers, ports, task cancellation."""

from __future__ import annotations

from weir.core.config_option import (
    _option,
    _positive_duration_ms,
    _positive_int,
    parse_memory_bytes,
)

# --- TaskManager and network ------------------------------------------------------
NUM_TASK_SLOTS = _option(
    "taskmanager.numberOfTaskSlots",
    1,
    _positive_int,
    "Slots per TaskManager. One by default: Python threads share the GIL, so parallelism "
    "comes from more TaskManagers (Spark executor cores).",
)
SEGMENT_SIZE = _option(
    "taskmanager.memory.segment-size",
    32 * 1024,
    parse_memory_bytes,
    "Size of a network buffer in bytes.",
)
# A frame carries one network buffer whole. The receiver allocates a frame's announced
# length before it arrives, so it refuses lengths past this ceiling as a corrupt stream;
# the per-job limit below may be raised up to it, never past it.
MAX_FRAME_SIZE_CEILING = 1 << 30


def _frame_size(text: str) -> int:
    value = parse_memory_bytes(text)
    if not 0 < value <= MAX_FRAME_SIZE_CEILING:
        msg = f"expected a size above 0 and at most 1 gb, got {text!r}"
        raise ValueError(msg)
    return value


# Flink's records span buffers; ours travel in one buffer each, so one record must fit in
# a frame. 64 MiB keeps what a receiver allocates for one frame bounded while no ordinary
# record comes near it.
MAX_FRAME_SIZE = _option(
    "taskmanager.network.max-frame-size",
    64 * 1024 * 1024,
    _frame_size,
    "Largest network frame (one serialized buffer) a task sends; a record that does not "
    "fit in one alone fails the task with its size. At most 1 gb.",
)
BUFFERS_PER_CHANNEL = _option(
    "taskmanager.network.memory.buffers-per-channel",
    2,
    _positive_int,
    "Exclusive buffers (initial credit) per input channel.",
)
FLOATING_BUFFERS_PER_GATE = _option(
    "taskmanager.network.memory.floating-buffers-per-gate",
    8,
    int,
    "Floating buffers per input gate, lent as extra credit to backlogged channels.",
)
MAX_BUFFERS_PER_SUBPARTITION = _option(
    "taskmanager.network.memory.max-buffers-per-channel",
    10,
    _positive_int,
    "Buffers a subpartition may queue before its writer blocks (back-pressure).",
)
# A consumer sends its handshake as its first bytes, so a real one finishes in
# milliseconds; the timeout only ends connections that never will, which otherwise hold a
# file descriptor each until the TaskManager runs out. 10 s is what Flink's data plane
# gives its TLS handshake (Netty's SslHandler default, left in place by
# security.ssl.internal.handshake-timeout = -1): far above a loaded host's pause, far
# below the 50 s heartbeat timeout, after which a silent peer is lost anyway.
HANDSHAKE_TIMEOUT = _option(
    "taskmanager.network.handshake-timeout",
    10_000,
    _positive_duration_ms,
    "How long a TaskManager's data server waits for a new connection to authenticate "
    "(TLS, then the data handshake with security.auth.token) before closing it.",
)
# A consumer TaskManager opens one connection to a producer TaskManager, so a host has at
# most one unauthenticated connection per TaskManager on it, and only for milliseconds:
# 64 covers 64 TaskManagers of one host connecting at the same moment. The oldest
# unauthenticated connections are closed first, so a flood from one host costs that host
# its own connections, never another host's.
MAX_UNAUTHENTICATED_CONNECTIONS_PER_HOST = _option(
    "taskmanager.network.max-unauthenticated-connections-per-host",
    64,
    _positive_int,
    "Connections one peer address may hold open on a TaskManager's data server before "
    "they authenticate; past it the oldest of them is closed.",
)
# All peers together: a quarter of the common open-file limit of 1024, so unauthenticated
# connections alone cannot exhaust a TaskManager's file descriptors.
MAX_UNAUTHENTICATED_CONNECTIONS = _option(
    "taskmanager.network.max-unauthenticated-connections",
    256,
    _positive_int,
    "Connections all peers together may hold open on a TaskManager's data server before "
    "they authenticate; past it the oldest of them is closed.",
)
NETWORK_COMPRESSION = _option(
    "taskmanager.network.compression.codec",
    "none",
    str.lower,
    "Compression of network buffers.",
    ("none", "lz4"),
)
# Flink's key and values; Flink's default is DISABLED. Ours is THROW: a TaskManager is
# one Python process hosting the tasks of every job leased to it, so a user function that
# ended the process would fail all of them and lose the lease, and the job would only
# learn that a TaskManager was lost, not which task did it with which code.
INTERCEPT_USER_SYSTEM_EXIT = _option(
    "cluster.intercept-user-system-exit",
    "THROW",
    str.upper,
    "What os._exit in user code does on a task thread: THROW fails the task naming the "
    "exit code and keeps the TaskManager running; LOG logs the call and exits; DISABLED "
    "exits.",
    ("disabled", "log", "throw"),
)


def parse_port_span(text: str) -> tuple[int, int]:
    """A TaskManager port as Flink writes it: ``0`` (any free port), ``50100`` or
    ``50100-50200``, as (first, last). (``port_range.parse_port_range`` also takes lists.)"""
    first, sep, last = str(text).strip().partition("-")
    try:
        low = int(first)
        high = int(last) if sep else low
    except ValueError:
        msg = f"expected a port, or a range such as 50100-50200, got {text!r}"
        raise ValueError(msg) from None
    if not (0 <= low <= high <= 65535) or (low == 0 and high != 0):
        msg = (
            f"expected ports from 1 to 65535 with the first not above the last (or 0), got {text!r}"
        )
        raise ValueError(msg)
    return low, high


TASKMANAGER_HOST = _option(
    "taskmanager.host",
    "",
    str,
    "Address a TaskManager advertises to the cluster (its gRPC and data endpoints). Empty: "
    "the address of the TaskManager's host on the interface that routes to the "
    "ResourceManager (127.0.0.1 when the master is on loopback).",
)
TASKMANAGER_BIND_HOST = _option(
    "taskmanager.bind-host",
    "",
    str,
    "Interface TaskManagers bind their gRPC and data servers to (0.0.0.0: all). Empty: "
    "taskmanager.host.",
)
TASKMANAGER_DATA_PORT = _option(
    "taskmanager.data.port",
    (0, 0),
    parse_port_span,
    "Port of a TaskManager's data server: 0 (any free), a port, or a range such as "
    "50100-50200 for firewalled clusters (the first free one is taken).",
)
TASKMANAGER_RPC_PORT = _option(
    "taskmanager.rpc.port",
    (0, 0),
    parse_port_span,
    "Port of a TaskManager's gRPC endpoint: 0 (any free), a port, or a range.",
)
TASKMANAGER_TMP_DIR = _option(
    "io.tmp.dirs", "", str, "Working directories of TaskManagers (default: the system temp dir)."
)
# A TaskManager killed while a sibling starts may still hold its lock at that moment (a
# dying process lets go of its files last), so the sweep made on start is repeated.
WORKING_DIRECTORY_CLEANUP_INTERVAL = _option(
    "taskmanager.working-directory.cleanup-interval",
    60_000,
    _positive_duration_ms,
    "How often a TaskManager removes the working directories under io.tmp.dirs left by "
    "TaskManagers that were killed (it also does so when it starts).",
)
