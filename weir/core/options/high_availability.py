"""High availability keys (Flink's HighAvailabilityOptions and
KubernetesHighAvailabilityOptions): ZooKeeper, Kubernetes, storage, cluster id."""

from __future__ import annotations

from weir.core.config_option import (
    _option,
    _parse_bool,
    _positive_duration_ms,
    _positive_int,
)

# --- high availability --------------------------------------------------------------
HA_TYPE = _option(
    "high-availability.type",
    "none",
    str.lower,
    "High-availability mode: none, zookeeper, or kubernetes (leader election and pointers "
    "in a ConfigMap of the cluster's namespace, no ZooKeeper).",
    ("none", "zookeeper", "kubernetes"),
)
HA_ZK_QUORUM = _option(
    "high-availability.zookeeper.quorum", "", str, "ZooKeeper quorum host:port,..."
)
HA_CLUSTER_ID = _option(
    "high-availability.cluster-id", "/default", str, "Namespace of this cluster in ZooKeeper."
)
HA_STORAGE_DIR = _option(
    "high-availability.storageDir",
    "",
    str,
    "Where job graphs are stored (any fsspec URL); ZooKeeper holds only pointers to them.",
)
HA_ZK_PATH_ROOT = _option(
    "high-availability.zookeeper.path.root",
    "/weir",
    str,
    "The ZooKeeper node under which every Weir cluster keeps its data.",
)
# Kubernetes high availability (Flink's KubernetesHighAvailabilityOptions, Flink's
# defaults). The leader renews its lease in the ConfigMap every retry period; a standby
# takes over once it has seen the lease unchanged for the lease duration (by its own clock,
# so the masters' clocks need not agree); the leader gives its leadership up once it has
# not renewed for the renew deadline, by its own clock. The renew deadline must not exceed
# the lease duration: the leader then stops leading no later than a standby can start.
# A cluster that wants faster failover lowers the lease duration and the renew deadline
# together, keeping the retry period a fraction of them (each renewal is one write).
HA_KUBERNETES_LEASE_DURATION = _option(
    "high-availability.kubernetes.leader-election.lease-duration",
    15_000,
    _positive_duration_ms,
    "How long a standby waits, having seen the leader's lease unchanged, before it takes "
    "the leadership over (ms).",
)
HA_KUBERNETES_RENEW_DEADLINE = _option(
    "high-availability.kubernetes.leader-election.renew-deadline",
    15_000,
    _positive_duration_ms,
    "How long the leader keeps leading without renewing its lease before it gives the "
    "leadership up (ms); at most the lease duration.",
)
HA_KUBERNETES_RETRY_PERIOD = _option(
    "high-availability.kubernetes.leader-election.retry-period",
    5_000,
    _positive_duration_ms,
    "Pause between two attempts to renew (the leader) or to take (a standby) the lease (ms).",
)
# A write to the HA ConfigMap is a compare-and-swap on its resourceVersion; the leader's
# renewals and its other writes change it, so a write may find it changed and try again
# (reading, checking the leader, writing) this many times before it fails.
HA_KUBERNETES_TRANSACTIONAL_MAX_RETRIES = _option(
    "kubernetes.transactional-operation.max-retries",
    5,
    _positive_int,
    "Attempts of a compare-and-swap write to the high-availability ConfigMap that found it "
    "changed by another writer, before the write fails.",
)
# Flink's ZooKeeper client settings (HighAvailabilityOptions), with Flink's defaults. The
# session timeout is how long a leader that stopped answering (killed, paused, cut off)
# keeps its leadership: a standby takes over that long after the leader dies, so a cluster
# that wants fast failover lowers it (ZooKeeper bounds it to 2..20 ticks of the server).
HA_ZK_SESSION_TIMEOUT = _option(
    "high-availability.zookeeper.client.session-timeout",
    60_000,
    _positive_duration_ms,
    "ZooKeeper session timeout (ms): a leader that stops answering loses leadership after it.",
)
# How long one connection attempt to a quorum member may take; a fraction of the session
# timeout, so a client tries several members before its session could expire.
HA_ZK_CONNECTION_TIMEOUT = _option(
    "high-availability.zookeeper.client.connection-timeout",
    15_000,
    _positive_duration_ms,
    "ZooKeeper connection timeout (ms).",
)
HA_ZK_RETRY_WAIT = _option(
    "high-availability.zookeeper.client.retry-wait",
    5_000,
    _positive_duration_ms,
    "Pause between two attempts of a ZooKeeper operation that lost its connection (ms).",
)
HA_ZK_MAX_RETRY_ATTEMPTS = _option(
    "high-availability.zookeeper.client.max-retry-attempts",
    3,
    _positive_int,
    "Attempts of a ZooKeeper operation that lost its connection before it fails.",
)
# Flink's default: a suspended connection is a lost leadership. A leader cut off from its
# quorum cannot tell whether its session still lives; ZooKeeper may expire it and elect a
# standby at any moment, so the leader stops its jobs at once rather than race its
# successor. True keeps leading through short interruptions, at that risk, and gives up
# once disconnected for the session timeout by the master's own clock (kazoo reports LOST
# only after reconnecting, which a partitioned master cannot do).
HA_ZK_TOLERATE_SUSPENDED_CONNECTIONS = _option(
    "high-availability.zookeeper.client.tolerate-suspended-connections",
    False,
    _parse_bool,
    "Whether a suspended ZooKeeper connection keeps leadership: false gives it up at once "
    "(the jobs stop and a standby takes over); true waits for the session to be lost, "
    "or to be disconnected for the session timeout by the master's clock.",
)
