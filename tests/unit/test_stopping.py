"""The drain bookkeeping behind a graceful stop: a stop is complete only when every live ingress
replica has acknowledged it and has reported no run in flight for SETTLE_S (so requests still queued in
Serve's routers reach a replica and are refused); a replica that stopped reporting is gone."""

from __future__ import annotations

from deployments.stopping import SETTLE_S, STALE_AFTER_S, DrainBoard, is_drained


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_stop_completes_when_every_live_replica_has_drained() -> None:
    clock = Clock()
    board = DrainBoard(clock)
    assert board.report("app", "r1", 3, False) is False  # not stopping yet
    assert board.report("app", "r2", 1, False) is False
    assert board.report("other", "r9", 7, False) is False
    board.stop("app")
    assert board.report("app", "r1", 3, False) is True  # r1 learns it must drain
    assert board.state("app") == {"replicas": 2, "draining": 0, "in_flight": 4, "idle_s": 0.0}
    board.report("app", "r1", 2, True)
    board.report("app", "r2", 1, True)
    assert board.state("app") == {"replicas": 2, "draining": 2, "in_flight": 3, "idle_s": 0.0}  # still running
    assert not is_drained(board.state("app"))
    board.report("app", "r1", 0, True)
    board.report("app", "r2", 0, True)
    assert board.state("app") == {"replicas": 2, "draining": 2, "in_flight": 0, "idle_s": 0.0}
    assert not is_drained(board.state("app"))  # a request queued in a router may still arrive
    clock.now += 1.0
    board.report("app", "r1", 1, True)  # ...and one did: r1 is answering it
    clock.now += 0.5
    board.report("app", "r1", 0, True)
    board.report("app", "r2", 0, True)
    clock.now += SETTLE_S - 0.1
    board.report("app", "r1", 0, True)
    board.report("app", "r2", 0, True)
    assert board.state("app")["idle_s"] == round(SETTLE_S - 0.1, 2)  # r1's idle time started again
    assert not is_drained(board.state("app"))
    clock.now += 0.2
    board.report("app", "r1", 0, True)
    board.report("app", "r2", 0, True)
    assert is_drained(board.state("app"))
    assert board.report("other", "r9", 7, False) is False  # another application is untouched
    board.forget("app")
    assert board.state("app") == {"replicas": 0, "draining": 0, "in_flight": 0, "idle_s": 0.0}
    assert board.report("app", "r1", 0, False) is False  # started again: not stopping


def test_a_replica_that_stopped_reporting_or_left_holds_nothing() -> None:
    clock = Clock()
    board = DrainBoard(clock)
    board.stop("app")
    board.report("app", "dead", 5, False)
    board.report("app", "gone", 2, True)
    board.leave("app", "gone")
    clock.now += STALE_AFTER_S + 0.1
    board.report("app", "live", 0, True)
    assert board.state("app") == {"replicas": 1, "draining": 1, "in_flight": 0, "idle_s": 0.0}
    clock.now += SETTLE_S
    board.report("app", "live", 0, True)
    assert is_drained(board.state("app"))


def test_a_replica_that_has_not_acknowledged_holds_the_stop() -> None:
    clock = Clock()
    board = DrainBoard(clock)
    board.stop("app")
    board.report("app", "r1", 0, True)
    board.report("app", "r2", 0, False)  # idle but has not learnt of the stop yet
    clock.now += SETTLE_S + 1
    board.report("app", "r1", 0, True)
    board.report("app", "r2", 0, False)
    assert not is_drained(board.state("app"))
