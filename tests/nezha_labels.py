"""The Nezha day's labelled faults, read by tests to score, never by the code under test."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path


def faults(day: Path) -> list[dict[str, str]]:
    data = json.loads((day / f"{day.name}-fault_list.json").read_text(encoding="utf-8"))
    return [f for hour in data.values() for f in hour]


def inject_time(fault: dict[str, str]) -> float:
    return datetime.strptime(fault["inject_time"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
