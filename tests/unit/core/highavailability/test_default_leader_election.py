"""DefaultLeaderElectionService over a driver: the contender is granted the process's token
before its address is published, revoked when the process stops leading, and takes its
address down when it leaves; leadership is the contender's only with the token it holds."""

from __future__ import annotations

from collections.abc import Callable

from weir.core.errors import LeaderLostError
from weir.core.highavailability.leader_election import (
    DefaultLeaderElectionService,
    LeaderElectionDriver,
    LeadershipListener,
)
from weir.core.highavailability.services import LeaderContender


class TestingDriver(LeaderElectionDriver):
    __test__ = False  # a test double, not a test class

    def __init__(self) -> None:
        self.component = "dispatcher"
        self.listeners: list[LeadershipListener] = []
        self.suspend_listeners: list[Callable[[bool], None]] = []
        self.leading: str | None = None
        self.published: dict[str, str] = {}  # token -> address
        self.events: list[str] = []
        self.fenced = False

    def lead(self, token: str | None) -> None:
        self.leading = token
        for listener in list(self.listeners):
            listener(token)

    def add_listener(self, listener: LeadershipListener) -> None:
        self.listeners.append(listener)

    def remove_listener(self, listener: LeadershipListener) -> None:
        self.listeners.remove(listener)

    def add_suspend_listener(self, listener: Callable[[bool], None]) -> None:
        self.suspend_listeners.append(listener)

    def remove_suspend_listener(self, listener: Callable[[bool], None]) -> None:
        self.suspend_listeners.remove(listener)

    def has_leadership(self, token: str) -> bool:
        return token == self.leading

    def confirm(self, token: str) -> bool:
        self.events.append(f"confirm {token}")
        return token == self.leading

    def publish(self, token: str, address: str) -> None:
        if self.fenced:
            raise LeaderLostError("fenced")
        self.events.append(f"publish {token} {address}")
        self.published[token] = address

    def take_down(self, token: str) -> None:
        self.events.append(f"take down {token}")
        if token not in self.published:
            raise LeaderLostError("gone")
        del self.published[token]


class Contender(LeaderContender):
    def __init__(self, driver: TestingDriver) -> None:
        self.driver = driver

    def grant_leadership(self, fencing_token: str) -> None:
        self.driver.events.append(f"granted {fencing_token}")

    def revoke_leadership(self) -> None:
        self.driver.events.append("revoked")

    def suspend_leadership(self, suspended: bool) -> None:
        self.driver.events.append(f"suspended {suspended}")

    @property
    def address(self) -> str:
        return "127.0.0.1:6123"


def _started() -> tuple[TestingDriver, DefaultLeaderElectionService]:
    driver = TestingDriver()
    service = DefaultLeaderElectionService(driver)
    service.start(Contender(driver))
    return driver, service


def test_the_grant_comes_before_the_address_is_published():
    driver, service = _started()
    driver.lead("t1")
    assert driver.events == ["granted t1", "publish t1 127.0.0.1:6123"]
    assert service.has_leadership("t1")
    assert not service.has_leadership("t0")


def test_leadership_is_the_contenders_only_with_the_token_it_was_granted():
    driver, service = _started()
    driver.lead("t1")
    driver.leading = "t2"  # the process leads again, but this contender holds t1
    assert not service.has_leadership("t1")
    assert not service.has_leadership("t2")
    assert not service.confirm_leadership("t2")
    assert "confirm t2" not in driver.events  # not asked: the contender does not hold t2


def test_a_publication_fenced_off_leaves_the_grant_and_the_revocation_to_the_driver():
    driver, service = _started()
    driver.fenced = True
    driver.lead("t1")
    assert driver.events == ["granted t1"]
    driver.lead(None)
    assert driver.events == ["granted t1", "revoked"]
    assert not service.has_leadership("t1")


def test_a_revocation_reaches_only_a_contender_that_was_granted():
    driver, _service = _started()
    driver.lead(None)
    assert driver.events == []


def test_suspensions_reach_the_contender_only_while_it_leads():
    driver, _service = _started()
    for listener in driver.suspend_listeners:
        listener(True)
    assert driver.events == []
    driver.lead("t1")
    for listener in driver.suspend_listeners:
        listener(True)
    assert driver.events[-1] == "suspended True"


def test_leaving_takes_the_address_down_before_the_contender_is_revoked():
    driver, service = _started()
    driver.lead("t1")
    service.stop()
    assert driver.events[-2:] == ["take down t1", "revoked"]
    assert driver.published == {}
    assert driver.listeners == []
    assert driver.suspend_listeners == []
    driver.lead("t2")  # no longer listening
    assert driver.events[-1] == "revoked"


def test_leaving_after_the_address_is_gone_still_revokes():
    driver, service = _started()
    driver.lead("t1")
    driver.published.clear()  # gone with the session
    service.stop()
    assert driver.events[-2:] == ["take down t1", "revoked"]


def test_leaving_without_leadership_takes_nothing_down():
    driver, service = _started()
    service.stop()
    assert driver.events == []
