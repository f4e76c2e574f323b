"""Helpers the file backends share: number and time parsing, the in-memory series store."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Generic, TypeVar

import numpy as np

from telemetry.model import Series

T = TypeVar("T")


def number(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else float("nan")
    except ValueError:
        return float("nan")


def utc_seconds(text: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> float:
    return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()


class Lazy(Generic[T]):
    """A value loaded once, off the event loop, on first use (file backends read their files lazily)."""

    def __init__(self, load: Callable[[], T]) -> None:
        self._load = load
        self._value: T | None = None
        self._lock = threading.Lock()

    def get_sync(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._load()
            return self._value

    async def get(self) -> T:
        if self._value is not None:
            return self._value
        return await asyncio.to_thread(self.get_sync)


def series_in(store: Iterable[Series], signal: str, start: float, end: float, service: str | None) -> list[Series]:
    return [s.between(start, end) for s in store if s.signal == signal and (service is None or s.service == service)]


def make_series(service: str, signal: str, instance: str, ts: list[float], values: list[float]) -> Series:
    order = np.argsort(np.asarray(ts, dtype=float), kind="stable")
    return Series(service, signal, instance, np.asarray(ts, dtype=float)[order], np.asarray(values, dtype=float)[order])
