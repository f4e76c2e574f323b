"""Backends composed: several sources as one, and any backend seen through a run's clock."""

from __future__ import annotations

import asyncio

from telemetry.model import Edge, Inventory, LogRecord, Series, Span, TelemetryBackend


class CompositeTelemetry:
    """Several backends answering as one (the ``file`` backend's demo, Loghub, NAB and Nezha sources)."""

    def __init__(self, parts: list[TelemetryBackend], name: str = "file") -> None:
        self.parts = parts
        self.name = name

    async def services(self) -> list[str]:
        found = await asyncio.gather(*(p.services() for p in self.parts))
        return sorted({s for batch in found for s in batch})

    async def signals(self, service: str) -> list[str]:
        found = await asyncio.gather(*(p.signals(service) for p in self.parts))
        return sorted({s for batch in found for s in batch})

    async def series(self, signal: str, start: float, end: float, service: str | None = None) -> list[Series]:
        found = await asyncio.gather(*(p.series(signal, start, end, service) for p in self.parts))
        return [s for batch in found for s in batch]

    async def logs(self, service: str, start: float, end: float) -> list[LogRecord] | None:
        found = [r for r in await asyncio.gather(*(p.logs(service, start, end) for p in self.parts)) if r is not None]
        if not found:
            return None
        return sorted((rec for batch in found for rec in batch), key=lambda rec: rec.ts)

    async def log_services(self) -> list[str]:
        found = await asyncio.gather(*(p.log_services() for p in self.parts))
        return sorted({s for batch in found for s in batch})

    async def edges(self) -> list[Edge]:
        found = await asyncio.gather(*(p.edges() for p in self.parts))
        return list(dict.fromkeys(e for batch in found for e in batch))

    async def spans(self, start: float, end: float) -> list[Span] | None:
        found = [s for s in await asyncio.gather(*(p.spans(start, end) for p in self.parts)) if s is not None]
        if not found:
            return None
        return sorted((span for batch in found for span in batch), key=lambda span: span.start)

    async def inventory(self) -> Inventory:
        parts = await asyncio.gather(*(p.inventory() for p in self.parts))
        firsts = [i.first for i in parts if i.first is not None]
        lasts = [i.last for i in parts if i.last is not None]
        signals: dict[str, list[str]] = {}
        for inv in parts:
            for svc, names in inv.signals.items():
                signals[svc] = sorted(set(signals.get(svc, [])) | set(names))
        return Inventory(
            self.name,
            await self.services(),
            signals,
            await self.log_services(),
            sum(i.edges for i in parts),
            min(firsts, default=None),
            max(lasts, default=None),
            [f"{i.backend}: {n}" for i in parts for n in i.notes],
        )


class ClockedTelemetry:
    """A backend seen at the run's clock: no sample and no log line later than ``as_of`` gets out,
    whatever window a tool asks for."""

    def __init__(self, inner: TelemetryBackend, as_of: float) -> None:
        self.inner = inner
        self.as_of = as_of
        self.name = inner.name

    async def services(self) -> list[str]:
        return await self.inner.services()

    async def signals(self, service: str) -> list[str]:
        return await self.inner.signals(service)

    async def series(self, signal: str, start: float, end: float, service: str | None = None) -> list[Series]:
        end = min(end, self.as_of)
        if start > end:
            return []
        return [s.between(start, end) for s in await self.inner.series(signal, start, end, service)]

    async def logs(self, service: str, start: float, end: float) -> list[LogRecord] | None:
        end = min(end, self.as_of)
        records = await self.inner.logs(service, start, end)
        return None if records is None else [r for r in records if start <= r.ts <= end]

    async def log_services(self) -> list[str]:
        return await self.inner.log_services()

    async def edges(self) -> list[Edge]:
        return await self.inner.edges()

    async def spans(self, start: float, end: float) -> list[Span] | None:
        # A span still open at the clock would tell its future duration: only spans ended by then.
        end = min(end, self.as_of)
        spans = await self.inner.spans(start, end)
        return None if spans is None else [s for s in spans if start <= s.start and s.end <= end]

    async def inventory(self) -> Inventory:
        return await self.inner.inventory()
