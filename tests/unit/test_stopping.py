"""The drain bookkeeping behind a graceful stop: a stop is complete only when every live ingress
replica has acknowledged it and reports no run in flight; a replica that stopped reporting is gone."""

from __future__ import annotations

from deployments.stopping import STALE_AFTER_S, DrainBoard


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
    assert board.state("app") == {"replicas": 2, "draining": 0, "in_flight": 4}
    board.report("app", "r1", 2, True)
    board.report("app", "r2", 1, True)
    assert board.state("app") == {"replicas": 2, "draining": 2, "in_flight": 3}  # still running
    board.report("app", "r1", 0, True)
    board.report("app", "r2", 0, True)
    assert board.state("app") == {"replicas": 2, "draining": 2, "in_flight": 0}
    assert board.report("other", "r9", 7, False) is False  # another application is untouched
    board.forget("app")
    assert board.state("app") == {"replicas": 0, "draining": 0, "in_flight": 0}
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
    assert board.state("app") == {"replicas": 1, "draining": 1, "in_flight": 0}
