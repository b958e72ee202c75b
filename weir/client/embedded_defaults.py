"""The settings of an embedded MiniCluster (the one ``env.execute()`` starts in the
program's own process), below both ``embedded`` and ``mini_cluster``, which read them."""

from __future__ import annotations

# Leases are made on demand, so a generous local[N] costs nothing until a job needs the
# TaskManagers; it lets jobs use more parallelism than the machine has cores, as Flink's
# MiniCluster does.
#
# The embedded driver lives as long as one program: its JVM stops at C1, the quick
# compiler (Spark's driver only schedules leases here; the records never pass through
# it), which shortens the start of a short run by a second or more.
EMBEDDED_DEFAULTS = {
    "spark.master": "local[16]",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    # Nothing to clean up in a driver that lives for one program and is not stopped but
    # left to end with it: no cleaner thread to complain as the JVM goes down.
    "spark.cleaner.referenceTracking": "false",
}
