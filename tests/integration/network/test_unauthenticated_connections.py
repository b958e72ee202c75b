"""A data server holds connections that have not authenticated only briefly: it closes
them after the handshake timeout, and closes the oldest once a peer host, or all peers
together, hold more than their cap. When ``accept`` fails (out of file descriptors) it
warns, pauses accepting and serves on once descriptors are free again. Real consumers
read real producers throughout."""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from typing import IO

import pytest
from test_malformed_frames import DEADLINE_S, EXPECTED, HOST, TOKEN, _exchange

from weir.core.security import SecurityConfig
from weir.taskmanager.network import DefaultNetworkEnvironment, NetworkConfig
from weir.taskmanager.network.frames import Frame, FrameDecoder, FrameType, encode_handshake

# Long enough that no connection of a test that counts on the caps ever expires.
NEVER_MS = 600_000


@pytest.fixture
def make_env() -> Iterator[Callable[..., DefaultNetworkEnvironment]]:
    envs: list[DefaultNetworkEnvironment] = []

    def make(name: str, **config: object) -> DefaultNetworkEnvironment:
        env = DefaultNetworkEnvironment(
            name * 8,
            HOST,
            NetworkConfig(security=SecurityConfig(token=TOKEN), **config),  # type: ignore[arg-type]
        )
        env.start()
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


@pytest.fixture
def connect() -> Iterator[Callable[..., socket.socket]]:
    """Opens idle client connections to a data server; closes them at the end."""
    socks: list[socket.socket] = []

    def open_one(port: int, source: str = HOST) -> socket.socket:
        sock = socket.create_connection((HOST, port), DEADLINE_S, source_address=(source, 0))
        socks.append(sock)
        return sock

    yield open_one
    for sock in socks:
        sock.close()


def _await_closed_by_server(sock: socket.socket) -> None:
    """Blocks until the server closes ``sock``; fails after DEADLINE_S."""
    sock.settimeout(DEADLINE_S)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass  # closed with our bytes unread: closed all the same
    except TimeoutError:
        pytest.fail(f"the server kept the idle connection {sock.getsockname()} open")


def _is_open(sock: socket.socket) -> bool:
    """No end of stream has arrived on ``sock`` (nor anything else)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.settimeout(DEADLINE_S)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("weir.taskmanager") and r.levelno >= logging.WARNING
    ]


class TestHandshakeTimeout:
    def test_idle_connections_are_closed_once_the_timeout_passes(
        self, make_env, connect, caplog: pytest.LogCaptureFixture
    ) -> None:
        producer = make_env("a", handshake_timeout_ms=200)
        with caplog.at_level(logging.WARNING, logger="weir.taskmanager"):
            idle = [connect(producer.data_port) for _ in range(50)]
            # A peer that starts the handshake and never finishes it is no different.
            half = connect(producer.data_port)
            half.sendall(encode_handshake(TOKEN)[:5])
            for sock in [*idle, half]:
                _await_closed_by_server(sock)
        lines = _warnings(caplog)
        # Said, naming the peer and the key to change, but not once per connection.
        assert 1 <= len(lines) < 51, lines
        assert HOST in lines[0]
        assert "taskmanager.network.handshake-timeout" in lines[0]
        assert _exchange(producer, make_env("b"), "after") == EXPECTED

    def test_an_authenticated_connection_is_never_timed_out(self, make_env, connect) -> None:
        producer = make_env("a", handshake_timeout_ms=200)
        authenticated = connect(producer.data_port)
        authenticated.sendall(encode_handshake(TOKEN))
        # Opened after it, closed after its own timeout: the first one's has passed too.
        _await_closed_by_server(connect(producer.data_port))
        assert _is_open(authenticated)


class TestCaps:
    def test_a_host_over_its_cap_loses_its_oldest_unauthenticated_connections(
        self, make_env, connect, caplog: pytest.LogCaptureFixture
    ) -> None:
        producer = make_env(
            "a", handshake_timeout_ms=NEVER_MS, max_unauthenticated_connections_per_host=8
        )
        with caplog.at_level(logging.WARNING, logger="weir.taskmanager"):
            socks = [connect(producer.data_port) for _ in range(20)]
            for sock in socks[:12]:
                _await_closed_by_server(sock)
        # The 12th is closed when the 20th is accepted: the 8 newest are all there is.
        assert all(_is_open(sock) for sock in socks[12:])
        lines = _warnings(caplog)
        assert lines, "closing connections over the cap went unsaid"
        assert "taskmanager.network.max-unauthenticated-connections-per-host" in lines[0]
        assert HOST in lines[0]
        # A real consumer on the same host still connects: the oldest idle one makes room.
        assert _exchange(producer, make_env("b"), "after") == EXPECTED

    def test_all_hosts_over_the_total_cap_lose_the_oldest_of_all(
        self, make_env, connect, caplog: pytest.LogCaptureFixture
    ) -> None:
        producer = make_env(
            "a",
            handshake_timeout_ms=NEVER_MS,
            max_unauthenticated_connections_per_host=8,
            max_unauthenticated_connections=12,
        )
        with caplog.at_level(logging.WARNING, logger="weir.taskmanager"):
            second = [connect(producer.data_port, "127.0.0.2") for _ in range(6)]
            third = [connect(producer.data_port, "127.0.0.3") for _ in range(6)]
            fourth = [connect(producer.data_port, "127.0.0.4") for _ in range(4)]
            for sock in second[:4]:
                _await_closed_by_server(sock)
        assert all(_is_open(sock) for sock in second[4:] + third + fourth)
        lines = _warnings(caplog)
        assert any("taskmanager.network.max-unauthenticated-connections " in x for x in lines)
        assert "127.0.0.2" in " ".join(lines)
        assert _exchange(producer, make_env("b"), "after") == EXPECTED


# The data server of a real producer environment, and a real consumer, in a process whose
# open-file limit is lowered to a few descriptors above what it holds once both started.
_SERVER = textwrap.dedent(
    """
    import json, logging, os, resource, sys, threading

    from test_malformed_frames import EXPECTED, _exchange

    from weir.core.security import SecurityConfig
    from weir.taskmanager.network import DefaultNetworkEnvironment, NetworkConfig

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(levelname)s %(name)s %(message)s")
    # Caps and timeout out of the way: only the open-file limit stops accepting here.
    config = NetworkConfig(
        security=SecurityConfig(token="t"),
        handshake_timeout_ms=600_000,
        max_unauthenticated_connections_per_host=100_000,
        max_unauthenticated_connections=100_000,
    )
    reasons = []
    producer = DefaultNetworkEnvironment("a" * 8, "127.0.0.1", config)
    producer.start(on_fatal_error=reasons.append)
    consumer = DefaultNetworkEnvironment("b" * 8, "127.0.0.1", config)
    consumer.start()
    in_use = len(os.listdir("/proc/self/fd"))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 12, hard))
    print(producer.data_port, flush=True)
    sys.stdin.readline()  # the parent closed its connections
    got = _exchange(producer, consumer, "after")
    print(json.dumps({
        "exchanged": got == EXPECTED,
        "running": producer._connections.is_running,
        "fatal": reasons,
    }), flush=True)
    consumer.close()
    producer.close()
    """
)


class TestAcceptFailures:
    def test_out_of_file_descriptors_pauses_accepting_and_serves_on(self) -> None:
        here = os.path.dirname(__file__)
        path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
        child = subprocess.Popen(
            [sys.executable, "-c", _SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": path},
        )
        idle: list[socket.socket] = []
        try:
            _serve_through_emfile(child, idle)
        finally:
            for sock in idle:
                sock.close()
            if child.poll() is None:
                child.kill()
                child.wait()
            for stream in (child.stdin, child.stdout, child.stderr):
                if stream is not None:
                    stream.close()


def _serve_through_emfile(child: subprocess.Popen[str], idle: list[socket.socket]) -> None:
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    port = int(child.stdout.readline())
    lines: queue.Queue[str] = queue.Queue()
    stderr: list[str] = []

    def read_stderr(stream: IO[str]) -> None:
        for line in stream:
            stderr.append(line)
            lines.put(line)

    reader = threading.Thread(target=read_stderr, args=(child.stderr,), daemon=True)
    reader.start()
    # Far more connections than the server has descriptors: the kernel completes them
    # all (the listen backlog holds them), and the server runs out accepting them.
    idle += [socket.create_connection((HOST, port), DEADLINE_S) for _ in range(40)]
    try:
        first = lines.get(timeout=DEADLINE_S)
    except queue.Empty:
        pytest.fail("the data server never said that it could not accept")
    assert first.startswith("WARNING"), first
    assert "Too many open files" in first and "ulimit -n" in first, first
    for sock in idle:  # descriptors free up
        sock.close()
    # A new peer is served: the server reads its handshake and refuses the token.
    with socket.create_connection((HOST, port), DEADLINE_S) as probe:
        probe.sendall(encode_handshake("not the token"))
        frames: list[Frame] = []
        decoder = FrameDecoder()
        while not frames:
            chunk = probe.recv(65536)
            assert chunk, "the data server closed the probe without an answer"
            frames += decoder.feed(chunk)
        assert frames[0].frame_type == FrameType.ERROR_RESPONSE
    # And a real consumer reads a real producer, under the same open-file limit.
    child.stdin.write("go\n")
    child.stdin.flush()
    result = json.loads(child.stdout.readline() or "{}")
    assert result == {"exchanged": True, "running": True, "fatal": []}, "".join(stderr)
    assert child.wait(DEADLINE_S) == 0
    reader.join(DEADLINE_S)
    assert not [line for line in stderr if line.startswith(("ERROR", "CRITICAL"))], stderr
