"""Spill files per replica: none deletes another's, and the file of a replica that is gone is adopted
by the next one (its lock, held while a process lives, tells which is which)."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.records import AuditRecord
from audit.spill_owner import adopt_orphans, claim, family_of, replica_spill_path
from audit.writer import SpillFile


def records(run: str, n: int) -> list[AuditRecord]:
    return [
        AuditRecord(kind="trace_event", run_id=run, session_id="s", seq=i + 1, data={"sequence_no": i + 1})
        for i in range(n)
    ]


def test_each_replica_has_its_own_file(tmp_path: Path) -> None:
    base = tmp_path / "audit-spill.jsonl"
    a, b = replica_spill_path(base, "ingress-r1"), replica_spill_path(base, "ingress-r/2")
    assert a.name == "audit-spill-ingress-r1.jsonl" and b.name == "audit-spill-ingress-r_2.jsonl"
    sa, sb = SpillFile(a), SpillFile(b)
    sa.append(records("x", 2))
    sb.append(records("y", 3))
    assert [r.run_id for r in sa.take_all()] == ["x", "x"]
    assert len(sb.take_all()) == 3  # the other replica's take_all did not touch this file


def test_a_file_taken_by_someone_else_does_not_break_the_owner(tmp_path: Path) -> None:
    """The old failure: two writers of one shared file; one took it, the other raised forever after."""
    path = tmp_path / "shared.jsonl"
    first, second = SpillFile(path), SpillFile(path)
    first.append(records("x", 2))
    second.count = 2  # it appended there too, as the replicas did
    assert len(first.take_all()) == 2
    assert second.take_all() == [] and second.count == 0
    second.append(records("y", 1))
    assert len(second.take_all()) == 1


def test_the_files_of_gone_replicas_are_adopted_and_live_ones_left_alone(tmp_path: Path) -> None:
    base = tmp_path / "audit-spill.jsonl"
    family = family_of(base, "ingress")
    live = replica_spill_path(base, "ingress-live")
    gone = replica_spill_path(base, "ingress-gone")
    legacy = tmp_path / "audit-spill-ingress.jsonl"  # the one shared file of earlier versions
    writer_own = tmp_path / "audit-spill.jsonl"  # the audit writer's spill: not an ingress file
    live_lock = claim(live)
    SpillFile(live).append(records("live", 2))
    gone_lock = claim(gone)
    SpillFile(gone).append(records("gone", 3))
    gone_lock.close()  # the process died: the kernel released its lock
    SpillFile(legacy).append(records("legacy", 1))
    SpillFile(writer_own).append(records("writer", 4))

    me = replica_spill_path(base, "ingress-new")
    mine = claim(me)
    assert adopt_orphans(me, family) == 4
    assert sorted(r.run_id for r in SpillFile(me).take_all()) == ["gone"] * 3 + ["legacy"]
    assert not gone.exists() and not legacy.exists()
    assert SpillFile(live).count == 2 and SpillFile(writer_own).count == 4
    with pytest.raises(BlockingIOError):
        claim(live)  # still owned
    live_lock.close()
    mine.close()
