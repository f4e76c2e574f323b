"""Candidate causes from what the telemetry tools measured: a small map from measured facts to the
cause they point at (evidence decides, the model chooses and narrates: docs/harness.md).

Only the anomaly ranking's first service counts, and only when it is anomalous and no anomalous callee
explains it (``explained_by``): it is the tools' reading of where the fault sits. Its suspected category
(``telemetry/analysis/ranking.py``) names the kind of cause, in the ranking's own words:

| the ranking measured                                   | cause                                        | weight |
|--------------------------------------------------------|----------------------------------------------|--------|
| its database client waits (pool pending, slow queries) | it waits on its database                     | 6      |
|   … and a new or surging log template of it names a     | queries waiting on row locks hold its        | 8      |
|   lock wait or a deadlock (``LOCK_WAIT``)               | connections                                  |        |
| calls between services slowed where they meet it        | a network delay at it                        | 6      |
| CPU                                                     | CPU saturation                               | 6      |
| memory                                                  | memory growth                                | 6      |
| error lines, failed requests, lost events               | a code fault                                 | 6      |

A weight of 6 is a candidate cause at medium confidence (``harness/stages/analyzed.py``); 8, where two
tools agree, is high. The finding's line is the ranking's own evidence text, cited to its key, so the
decisive fact an answer leads with is what the tool measured.
"""

from __future__ import annotations

import re
from typing import Any

from harness.tools.base import LedgerEntry

# A database's own words for a statement waiting on another's row locks (MySQL/InnoDB, PostgreSQL).
LOCK_WAIT = re.compile(r"lock wait|lock timeout|deadlock|waiting for (?:a |row )?lock|锁等待|死锁", re.I)
CAUSES = {
    "dependency": "it waits on its database",
    "network": "a network delay where its calls meet",
    "cpu": "CPU saturation",
    "memory": "memory growth",
    "code": "a code fault",
}
WEIGHT = 6
AGREED_WEIGHT = 8
TEMPLATE_CHARS = 72


def _last_success(ledger: dict[str, LedgerEntry], tool: str) -> LedgerEntry | None:
    found = [e for e in ledger.values() if e.tool_name == tool and e.result.status == "success"]
    return found[-1] if found else None


def _lock_wait_template(ledger: dict[str, LedgerEntry], service: str) -> dict[str, Any] | None:
    """A new or surging log template of ``service`` naming a lock wait, with its evidence block."""
    for entry in ledger.values():
        if entry.tool_name != "query_logs" or entry.result.status != "success":
            continue
        if str(entry.result.output.get("service") or entry.args.get("service") or "") != service:
            continue
        blocks = {str(b.get("key")): b for b in entry.result.output.get("evidence") or [] if isinstance(b, dict)}
        for t in entry.result.output.get("templates") or []:
            key = f"logtpl:{service}:{t.get('id')}"
            if t.get("status") in ("new", "surging") and LOCK_WAIT.search(str(t.get("template"))) and key in blocks:
                return {**t, "key": key, "text": str(blocks[key].get("text") or "")}
    return None


def telemetry_findings(ledger: dict[str, LedgerEntry]) -> list[tuple[dict[str, Any], str, str, LedgerEntry]]:
    """(finding, evidence key, evidence text, the call) for the ranking's first service, where the map
    above gives a cause; none otherwise."""
    entry = _last_success(ledger, "rank_anomalies")
    ranking = entry.result.output.get("ranking") if entry is not None else None
    if entry is None or not ranking:
        return []
    top = ranking[0]
    category = str(top.get("suspected_category") or "")
    if not top.get("anomalous") or top.get("explained_by") or category not in CAUSES:
        return []
    service, key = str(top.get("service") or ""), str(top.get("key") or "")
    block = next((b for b in entry.result.output.get("evidence") or [] if b.get("key") == key), None)
    if not service or block is None:
        return []
    reason = str(top.get("reason") or "").strip()
    cause = CAUSES[category]
    if reason:  # the ranking's reason is the measured fact: "CPU deviates 12x its baseline spread"
        cause = reason if reason.startswith(cause) else f"{cause} ({reason})"
    weight = WEIGHT
    found: list[tuple[dict[str, Any], str, str, LedgerEntry]] = []
    if category == "dependency" and (locks := _lock_wait_template(ledger, service)) is not None:
        # One sentence that fits a root cause's 200 characters: the statement (its template, shortened),
        # how many of its lines are new, and the wait the ranking measured.
        template = str(locks.get("template") or "")
        template = template if len(template) <= TEMPLATE_CHARS else template[: TEMPLATE_CHARS - 1] + "…"
        waits = reason.removeprefix(CAUSES["dependency"]).strip(" ()")
        cause = (
            f"queries waiting on row locks hold its database connections ('{template}', "
            f"{locks.get('count')} {locks.get('status')} lines{'; ' + waits if waits else ''})"
        )
        weight = AGREED_WEIGHT
    finding = {
        "component": service,
        "kind": f"anomaly_{category}",
        "severity": "problem",
        "category": category,
        "weight": weight,
        "cause": cause,
        "resource": service,
    }
    found.append((finding, key, str(block.get("text") or ""), entry))
    return found
