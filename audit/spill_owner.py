"""One spill file per producer process, and adoption of the files of processes that are gone.

Every ingress replica on a node spilled to one shared file before: one replica's ``take_all`` deleted
it under the others. Now each replica spills to its own file (its replica id in the name) and holds an
exclusive ``flock`` on a companion ``.lock`` file for as long as it lives. The kernel releases the lock
when the process dies, however it dies, so a sibling file whose lock can be taken belongs to a replica
that is gone: the next replica to start on the node moves its records into its own spill file (and so
ships them). A move that is cut short leaves records in both files; delivery is idempotent by natural
key (audit/records.py), so that duplicates nothing in the database.
"""

from __future__ import annotations

import fcntl
import logging
import re
from pathlib import Path
from typing import IO

from audit.writer import SpillFile

log = logging.getLogger(__name__)


def replica_spill_path(base: str | Path, owner: str) -> Path:
    """``var/audit-spill.jsonl`` + owner ``ingress-r1`` → ``var/audit-spill-ingress-r1.jsonl``."""
    base = Path(base)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", owner)
    return base.with_name(f"{base.stem}-{safe}{base.suffix or '.jsonl'}")


def _lock_path(spill: Path) -> Path:
    return spill.with_name(spill.name + ".lock")


def claim(spill: Path) -> IO[str]:
    """Take the owner's lock of ``spill``; keep the returned handle open for the process's life."""
    spill.parent.mkdir(parents=True, exist_ok=True)
    handle = _lock_path(spill).open("a+", encoding="utf-8")
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if another process owns it
    return handle


def adopt_orphans(own: Path, family: str) -> int:
    """Move the records of every ``family`` spill file beside ``own`` whose owner is gone into
    ``own``'s spill file; the number of records adopted. ``own`` must be claimed already."""
    adopted = 0
    target = SpillFile(own)
    for other in sorted(own.parent.glob(f"{family}*.jsonl")):
        if other == own:
            continue
        lock = _lock_path(other)
        with lock.open("a+", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its owner is alive and ships it itself
            records = SpillFile(other).take_all()
            target.append(records)
            adopted += len(records)
            fcntl.flock(handle, fcntl.LOCK_UN)
        if not other.exists():
            lock.unlink(missing_ok=True)
        if records:
            log.warning("adopted %d audit records spilled by a replica that is gone (%s)", len(records), other.name)
    return adopted


def family_of(base: str | Path, kind: str) -> str:
    """The file-name prefix shared by every replica's spill file of one kind (and by the one shared
    file of that kind that earlier versions wrote, ``<stem>-<kind>.jsonl``)."""
    return f"{Path(base).stem}-{kind}"
