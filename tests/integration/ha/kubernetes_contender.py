"""A contender of Kubernetes high availability in a process of its own, for the fencing
tests: it leads or waits as a standby, publishes a Dispatcher address while leading, and
every 50 ms tries a fenced write of a counter with the token it was last granted, whether
or not it still leads (as a component that has not heard of its deposition would), and
says on stdout, one line per attempt, when (``time.monotonic()``, the machine's monotonic
clock, which the test's process shares) it asked whether it leads, the answer, and what
the write did.

    python kubernetes_contender.py CONFIG_JSON IDENTIFIER
"""

from __future__ import annotations

import json
import sys
import threading
import time

from weir.core.errors import LeaderLostError
from weir.core.highavailability import LeaderContender
from weir.core.highavailability.kubernetes import KubernetesHaServices

COUNTER_KEY = "contender-writes"


class Contender(LeaderContender):
    def __init__(self, address: str) -> None:
        self._address = address
        self.token: str | None = None
        self.lock = threading.Lock()

    @property
    def address(self) -> str:
        return self._address

    def grant_leadership(self, fencing_token: str) -> None:
        with self.lock:
            self.token = fencing_token
        print(f"granted {fencing_token}", flush=True)

    def revoke_leadership(self) -> None:
        print("revoked", flush=True)


def increment(data: dict[str, str]) -> dict[str, str]:
    data[COUNTER_KEY] = str(int(data.get(COUNTER_KEY, "0")) + 1)
    return data


def main() -> None:
    config, identifier = json.loads(sys.argv[1]), sys.argv[2]
    services = KubernetesHaServices(config, identifier)
    contender = Contender(f"127.0.0.1:{identifier}")
    election = services.get_dispatcher_leader_election()
    election.start(contender)
    services.start_contending()
    print("started", flush=True)
    while True:
        with contender.lock:
            token = contender.token
        if token is not None:
            asked = time.monotonic()
            leading = election.has_leadership(token)
            try:
                data = services.latch.guarded_update(token, increment)
                outcome = f"wrote {data[COUNTER_KEY]}"
            except LeaderLostError as exc:
                outcome = f"refused: {exc}"
            print(f"session {token[:8]} asked={asked:.6f} leading={leading} {outcome}", flush=True)
        time.sleep(0.05)  # the pace of attempts, nothing waits on it


if __name__ == "__main__":
    main()
