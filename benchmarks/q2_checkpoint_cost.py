"""What checkpoints every second cost q2 (the built-in Count over columns, 10 s tumbling
event-time windows), in this checkout and, with ``--baseline DIR``, in another checkout
of Weir with its own ``.venv`` (an older commit, through ``git worktree add``).

Each run is ``nexmark.run_q2_builtin`` in a fresh interpreter of the checkout it
measures; a round runs every checkout without and then with checkpoints, so the figures
compared come from the same rounds. Reports medians, each run's rate, the checkpoints
each run completed, and the load average.

    python benchmarks/q2_checkpoint_cost.py [--baseline DIR] [--events N]
                                            [--parallelism P ...] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess

HERE = pathlib.Path(__file__).resolve().parent.parent


def run_q2(
    checkout: pathlib.Path, events: int, parallelism: int, checkpoint_ms: int | None
) -> dict:
    """``run_q2_builtin`` in ``checkout``'s own interpreter: rate, results, checkpoints."""
    code = (
        "import json, nexmark; "
        f"rate, results = nexmark.run_q2_builtin({events}, {parallelism}, "
        f"checkpoint_ms={checkpoint_ms!r}); "
        "print(json.dumps([rate, results, nexmark.q2_checkpoints]))"
    )
    out = subprocess.run(
        [str(checkout / ".venv" / "bin" / "python"), "-c", code],
        cwd=checkout / "benchmarks",
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rate, results, checkpoints = json.loads(out.strip().splitlines()[-1])
    return {"rate": rate, "results": results, "checkpoints": checkpoints[-1] if checkpoints else 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=pathlib.Path, help="another checkout, with .venv")
    # At about 30 M events/s a run of 30 M would see one checkpoint: 100 M sees several.
    parser.add_argument("--events", type=int, default=100_000_000)
    parser.add_argument("--parallelism", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    checkouts = {"this checkout": HERE}
    if args.baseline is not None:
        checkouts = {"baseline": args.baseline.resolve(), **checkouts}
    for p in args.parallelism:
        runs: dict[tuple[str, str], list[dict]] = {}
        for _ in range(args.rounds):
            for name, checkout in checkouts.items():
                for label, interval in (("no checkpoints", None), ("checkpoint every 1 s", 1000)):
                    run = run_q2(checkout, args.events, p, interval)
                    runs.setdefault((name, label), []).append(run)
        results = {run["results"] for rs in runs.values() for run in rs}
        for (name, label), rs in runs.items():
            rates = [r["rate"] for r in rs]
            each = ", ".join(f"{r / 1e6:.2f}" for r in rates)
            median = statistics.median(rates) / 1e6
            line = f"p={p}  {name:14s} {label:22s} {median:6.2f} M events/s ({each})"
            if label != "no checkpoints":
                line += f"; checkpoints per run {[r['checkpoints'] for r in rs]}"
            print(line, flush=True)
        for name in checkouts:
            plain = runs[(name, "no checkpoints")]
            timed = runs[(name, "checkpoint every 1 s")]
            costs = [1 - c["rate"] / b["rate"] for b, c in zip(plain, timed, strict=True)]
            print(
                f"p={p}  {name:14s} checkpointing cost: median {statistics.median(costs):.1%} "
                f"(per round {', '.join(f'{c:.1%}' for c in costs)})"
            )
        print(f"p={p}  window results per run: {sorted(results)} (one value: all runs agree)")
    print(f"(cores: {os.cpu_count()}; load: {os.getloadavg()[0]:.1f}; medians of {args.rounds})")


if __name__ == "__main__":
    main()
