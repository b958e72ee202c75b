"""What mutual TLS costs: Nexmark q1 and the keyed count at p=2 across two TaskManagers of
the embedded MiniCluster, and the data plane's 32 KiB frames/s between two TaskManagers'
network environments, each with ``security.ssl.internal.enabled`` off and on (with the
token in both cases, as a cluster across hosts would run).

    .venv/bin/python benchmarks/tls_overhead.py [--events 4000000] [--keyed-events 2000000]
                                                [--rounds 2] [--seconds 3]

Each cluster run is a process of its own (one SparkContext per setting), and the rounds
alternate off and on so that load from elsewhere on the machine falls on both; the
medians are reported. The keyed count's exchange crosses between the two TaskManagers,
so its overhead is TLS on the data plane; q1 chains source and map, so only the control
plane (deployment, task reports) is encrypted there.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from network_throughput import HOST, run  # the 32 KiB exchange between two environments

from weir.client.certificates import write_cluster_certificates
from weir.core.security import SecurityConfig
from weir.taskmanager.network import DefaultNetworkEnvironment, NetworkConfig

FRAME = 32 * 1024
TOKEN = "benchmark-token"


def security_config(tls: bool, certs_dir: str) -> dict[str, str]:
    conf = {"security.auth.token": TOKEN}
    if tls:
        certs = write_cluster_certificates(certs_dir, [HOST])
        conf.update(dict(line.split(": ", 1) for line in certs.config_lines()))
    return conf


def data_plane_frames_per_s(tls: bool, seconds: float) -> float:
    with tempfile.TemporaryDirectory(prefix="weir-bench-certs-") as certs_dir:
        config = NetworkConfig(security=SecurityConfig.from_config(security_config(tls, certs_dir)))
        with (
            DefaultNetworkEnvironment("producer" * 4, HOST, config) as a,
            DefaultNetworkEnvironment("consumer" * 4, HOST, config) as b,
        ):
            a.start()
            b.start()
            frames, elapsed = run(a, b, f"tls-{tls}", FRAME, seconds)
    return frames / elapsed


def _cluster_rates(tls: bool, events: int, keyed_events: int) -> dict[str, float]:
    """In a child process: both jobs on a MiniCluster with TLS ``tls``."""
    # Imported here: only the child processes start clusters.
    from nexmark import run_job

    from weir.client.mini_cluster import MiniCluster
    from weir.core.executor import register_executor

    with tempfile.TemporaryDirectory(prefix="weir-bench-certs-") as certs_dir:
        config = {**security_config(tls, certs_dir), "resourcemanager.taskmanager.max": "2"}
        with MiniCluster(config) as cluster:
            register_executor(cluster.executor())
            rates = {"q1": run_job("q1", events, 2), "keyed": run_job("keyed", keyed_events, 2)}
            register_executor(None)
    return rates


def _in_child(tls: bool, events: int, keyed_events: int) -> dict[str, float]:
    argv = [sys.executable, __file__, "--child", "on" if tls else "off"]
    argv += ["--events", str(events), "--keyed-events", str(keyed_events)]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        msg = f"the benchmark run with TLS {'on' if tls else 'off'} failed:\n{result.stderr}"
        raise RuntimeError(msg)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _overhead(off: float, on: float) -> str:
    return f"{(off - on) / off * 100:+.1f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=4_000_000)
    parser.add_argument("--keyed-events", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--child", choices=("off", "on"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        rates = _cluster_rates(args.child == "on", args.events, args.keyed_events)
        print(json.dumps(rates))
        return

    results: dict[bool, dict[str, list[float]]] = {
        tls: {"q1": [], "keyed": [], "frames": []} for tls in (False, True)
    }
    for round_ in range(args.rounds):
        for tls in (False, True):
            frames = data_plane_frames_per_s(tls, args.seconds)
            rates = _in_child(tls, args.events, args.keyed_events)
            results[tls]["frames"].append(frames)
            results[tls]["q1"].append(rates["q1"])
            results[tls]["keyed"].append(rates["keyed"])
            print(
                f"round {round_ + 1} TLS {'on ' if tls else 'off'}: q1 {rates['q1']:>10,.0f} "
                f"events/s, keyed count {rates['keyed']:>10,.0f} events/s, data plane "
                f"{frames:>8,.0f} x 32 KiB frames/s",
                flush=True,
            )
    median = {
        tls: {k: statistics.median(v) for k, v in series.items()} for tls, series in results.items()
    }
    off, on = median[False], median[True]
    print("\nmedians              TLS off        TLS on   overhead")
    for key, label, unit in (
        ("q1", "q1 p=2", "events/s"),
        ("keyed", "keyed count p=2", "events/s"),
        ("frames", "32 KiB frames", "frames/s"),
    ):
        print(
            f"{label:16s} {off[key]:>12,.0f} {on[key]:>12,.0f}   {_overhead(off[key], on[key])}"
            f"  ({unit})"
        )
    print(
        f"\n(cores: {os.cpu_count()}; events: q1 {args.events:,}, keyed {args.keyed_events:,}; "
        f"{args.rounds} rounds; target: TLS overhead <= 15 % on the keyed count)"
    )


if __name__ == "__main__":
    main()
