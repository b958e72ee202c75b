"""Weir's peers on the Nexmark benchmarks, each in its own side environment.

``measure_peers(events, keyed_events, parallelisms=(1,))`` runs, on this machine, the
same q1 (a currency conversion per bid) and q2 (bids per auction in 10 s tumbling
event-time windows) as ``benchmarks/side_by_side.py`` on:

- a bare numpy loop over batches of bids (``numpy_limit.py``): the physical limit on one
  core;
- Bytewax 0.21 (``bytewax_q.py``), through its batch API over bid tuples
  (``flat_map_batch``, and its ``count_window`` for q2), and over numpy batches;
- Spark Structured Streaming 4.3 (``spark_q.py``) with native column expressions over
  the bids that its ``rate-micro-batch`` source makes in the JVM.

Each peer's rate is its steady state (start-up excluded; each script says how it
measures), and each run's result count is checked against the bare Python loops of
``benchmarks/nexmark.py``. The side environments are made under
``~/.cache/weir-bench/peers`` (or ``$WEIR_BENCH_PEERS``) the first time, which takes a
minute or two, and reused afterwards. ``python benchmarks/peers/run.py`` prints a table;
``benchmarks/side_by_side.py --peers`` adds the same rows to Weir's.

``pyflink_kafka.py`` is the PyFlink 2.3 peer of ``benchmarks/kafka.py``, run in the
environment of ``side_envs.pyflink``.
"""

from .measure import measure_peers

__all__ = ["measure_peers"]
