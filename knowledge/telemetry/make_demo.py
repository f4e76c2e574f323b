"""Writes the bundled demo telemetry (deterministic): an incident in payment-service on 2026-11-30.

10:00 UTC a slow query on the orders table (lock waits) holds database connections; the HikariCP pool
(max 20) saturates, requests queue and time out after 30 s. order-service stays healthy. The
runbooks in knowledge/ describe how to diagnose exactly this, so the demo questions find evidence.

    python knowledge/telemetry/make_demo.py
"""

from __future__ import annotations

import csv
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).parent
START = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)
INCIDENT = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def series(name: str, service: str, fn) -> None:  # type: ignore[no-untyped-def]
    path = HERE / "metrics" / service / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["timestamp", "value"])
        for i in range(61):
            t = START + timedelta(minutes=i)
            w.writerow([ts(t), round(fn(i, t >= INCIDENT and t < INCIDENT + timedelta(minutes=12)), 3)])


def main() -> None:
    rnd = random.Random(20261130)
    series("hikaricp_connections_max", "payment-service", lambda i, bad: 20)
    series("hikaricp_connections_active", "payment-service", lambda i, bad: 20 if bad else 5 + rnd.randint(0, 3))
    series("hikaricp_connections_pending", "payment-service", lambda i, bad: 40 + rnd.randint(0, 17) if bad else 0)
    series("http_server_requests_p99_ms", "payment-service", lambda i, bad: 30000 if bad else 110 + rnd.randint(0, 40))
    series(
        "mysql_slow_queries", "payment-service", lambda i, bad: 25 + rnd.randint(0, 10) if bad else rnd.randint(0, 1)
    )
    series("jvm_gc_pause_seconds_max", "payment-service", lambda i, bad: 0.02 + rnd.random() * 0.03)
    series("http_server_requests_p99_ms", "order-service", lambda i, bad: 90 + rnd.randint(0, 30))
    series("jvm_gc_pause_seconds_max", "order-service", lambda i, bad: 0.03 + rnd.random() * 0.04)

    logs = HERE / "logs"
    logs.mkdir(exist_ok=True)
    lines = []
    for i in range(0, 60 * 60, 45):
        t = START + timedelta(seconds=i)
        bad = INCIDENT <= t < INCIDENT + timedelta(minutes=12)
        if not bad:
            lines.append({"ts": ts(t), "level": "INFO", "message": f"POST /api/pay 200 {100 + rnd.randint(0, 60)}ms"})
            continue
        waiting = 40 + rnd.randint(0, 17)
        lines += [
            {
                "ts": ts(t),
                "level": "WARN",
                "message": "Slow query 12.8s: UPDATE orders SET status=? WHERE id=? (lock wait)",
            },
            {
                "ts": ts(t),
                "level": "ERROR",
                "message": "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
            },
            {
                "ts": ts(t),
                "level": "DEBUG",
                "message": f"HikariPool-1 - Pool stats (total=20, active=20, idle=0, waiting={waiting})",
            },
            {"ts": ts(t), "level": "ERROR", "message": "POST /api/pay 500 30012ms SQLTransientConnectionException"},
        ]
    (logs / "payment-service.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    order = [
        {
            "ts": ts(START + timedelta(seconds=i)),
            "level": "INFO",
            "message": f"GET /api/orders 200 {80 + rnd.randint(0, 40)}ms",
        }
        for i in range(0, 60 * 60, 60)
    ]
    (logs / "order-service.jsonl").write_text("".join(json.dumps(x) + "\n" for x in order))


if __name__ == "__main__":
    main()
