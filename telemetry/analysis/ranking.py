"""rank_anomalies: which services deviate from their own baseline, in what, since when, and which
of them the call graph says is the likely origin.

Method (measured in benchmarks/anomaly_ranking.py):
1. Per service, every *own* signal (``telemetry/signals.py``: resources, the latency it serves, its
   errors, and ``call_latency`` — how slow its callers find it) gets a robust deviation per instance
   (``deviation.py``), plus the signals derived from its logs and spans (``derived.py``) and the events
   its requests stopped having (``lost_events.py``); the service's own score is log(1 + the largest
   weighted deviation).
2. Propagation over the call graph: a caller is slow when its callee is, so a service's score is
   discounted by half of the largest own score among its callees (capped at its own). The service
   at the bottom of a slow call chain stays on top; its callers sink.
3. A suspected fault category from the deviating signals: errors or lost events → code; CPU → cpu;
   callers see it slow while it serves fast → network; memory → memory; its datastore client signals
   (connection-pool waits, slow queries: ``telemetry/signals.py``) → dependency; otherwise unknown.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from telemetry.analysis.derived import MODALITIES, derived_series, logs_and_spans
from telemetry.analysis.deviation import ANOMALY_THRESHOLD, Deviation, deviation
from telemetry.analysis.edge_delay import EDGE_DELAY, EDGE_GAP, edge_delay_deviations, span_gap_deviations
from telemetry.analysis.lost_events import lost_event_deviations
from telemetry.clock import Window
from telemetry.model import Edge, Series, TelemetryBackend
from telemetry.signals import SIGNALS, is_datastore_signal, signal_spec

PROPAGATION = 0.5


@dataclass
class ServiceAnomaly:
    service: str
    score: float
    own_score: float
    explained_by: str | None
    deviations: list[Deviation]  # the service's own signals, strongest first
    onset: float | None
    category: str
    category_reason: str
    pods: list[str] = field(default_factory=list)

    @property
    def anomalous(self) -> bool:
        return self.own_score >= math.log1p(ANOMALY_THRESHOLD)


def _best_by_signal(devs: list[Deviation]) -> dict[str, Deviation]:
    best: dict[str, Deviation] = {}
    for d in devs:
        if d.signal not in best or d.score > best[d.signal].score:
            best[d.signal] = d
    return best


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def seconds(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def categorize(devs: list[Deviation]) -> tuple[str, str]:
    """The likely kind of fault behind one service's deviations, with the reason in words."""
    best = _best_by_signal(devs)

    def score(name: str) -> float:
        return best[name].score if name in best else 0.0

    served = max(score("latency_p90"), score("latency_p99"))
    if score("error_rate") >= ANOMALY_THRESHOLD and score("error_rate") >= score("cpu"):
        return "code", f"error rate deviates {score('error_rate'):.0f}x its baseline spread"
    if score("log_errors") >= ANOMALY_THRESHOLD and score("log_errors") >= score("cpu"):
        return "code", f"error log lines deviate {score('log_errors'):.0f}x their baseline spread"
    if score("lost_events") >= ANOMALY_THRESHOLD and score("lost_events") >= score("cpu"):
        lost = best["lost_events"]
        return "code", (
            f"{lost.instance}: on {_share(lost.baseline_median)} of these requests before, {_share(lost.peak)} after"
        )
    if score("cpu") >= ANOMALY_THRESHOLD:
        return "cpu", f"CPU deviates {score('cpu'):.0f}x its baseline spread"
    if score("call_latency") >= ANOMALY_THRESHOLD and score("call_latency") > 2 * served:
        return "network", (
            f"callers see its calls {score('call_latency'):.0f}x slower than baseline while the latency it "
            f"serves deviates {served:.0f}x: the time is lost between them"
        )
    if score(EDGE_DELAY) >= ANOMALY_THRESHOLD and score(EDGE_DELAY) >= served:
        delay = best[EDGE_DELAY]
        return "network", (
            f"calls on its edges spend {seconds(delay.peak)} longer between the services than before "
            f"({score(EDGE_DELAY):.0f}x the spread) while the latency it serves deviates {served:.0f}x"
        )
    if score("memory") >= ANOMALY_THRESHOLD:
        return "memory", f"memory deviates {score('memory'):.0f}x its baseline spread"
    datastore = max((d for d in best.values() if is_datastore_signal(d.signal)), key=lambda d: d.score, default=None)
    if datastore is not None and datastore.anomalous:
        return "dependency", f"it waits on its database ({datastore.signal} {datastore.score:.0f}x its baseline spread)"
    return "unknown", "no resource, error or network signal stands out"


def rank_services(
    deviations: list[Deviation], edges: list[Edge], propagation: float = PROPAGATION
) -> list[ServiceAnomaly]:
    by_service: dict[str, list[Deviation]] = {}
    for d in deviations:
        by_service.setdefault(d.service, []).append(d)
    own: dict[str, float] = {}
    # What a callee's anomaly explains of its callers' (propagation): its own slowness, errors and
    # resources, not its slowed edges (edge_delay.py: a slowed edge belongs to where the edges meet).
    explains: dict[str, float] = {}
    for service, devs in by_service.items():
        weighted = [(d.signal, signal_spec(d.signal).weight * d.score) for d in devs if signal_spec(d.signal).own]
        own[service] = math.log1p(max((w for _, w in weighted), default=0.0))
        explains[service] = math.log1p(max((w for name, w in weighted if name != EDGE_DELAY), default=0.0))
    callees: dict[str, set[str]] = {}
    for e in edges:
        if e.caller in own and e.callee in own and e.caller != e.callee:
            callees.setdefault(e.caller, set()).add(e.callee)
    out = []
    for service, devs in by_service.items():
        below = sorted(callees.get(service, ()), key=lambda c: -explains[c])
        top_callee = below[0] if below else None
        callee_score = explains[top_callee] if top_callee else 0.0
        score = own[service] - propagation * min(own[service], callee_score)
        explained = top_callee if top_callee and callee_score >= math.log1p(ANOMALY_THRESHOLD) else None
        mine = sorted(
            (d for d in devs if signal_spec(d.signal).own), key=lambda d: -signal_spec(d.signal).weight * d.score
        )
        onsets = [d.onset for d in mine if d.anomalous and d.onset is not None]
        category, reason = categorize(mine)
        pods = sorted({d.instance for d in devs if "->" not in d.instance})
        out.append(
            ServiceAnomaly(
                service, score, own[service], explained, mine, min(onsets, default=None), category, reason, pods
            )
        )
    out.sort(key=lambda a: (-a.score, a.service))
    return out


async def collect_deviations(
    backend: TelemetryBackend,
    window: Window,
    baseline: Window,
    signals: list[str] | None = None,
    modalities: tuple[str, ...] = MODALITIES,
) -> list[Deviation]:
    """Every service's deviation in every signal (the catalogue's and the backend's own metric names),
    one backend query per signal for all services at once, plus the signals derived from its logs and
    traces (``derived.py``) and the events its requests stopped having (``lost_events.py``) when
    ``signals`` is not given."""
    derived: list[Series] = []
    lost: list[Deviation] = []
    if signals is None:
        services = await backend.services()
        own = await asyncio.gather(*(backend.signals(svc) for svc in services))
        signals = (
            list(dict.fromkeys([*SIGNALS, *(n for names in own for n in names)])) if "metrics" in modalities else []
        )
        data = await logs_and_spans(backend, baseline.start, window.end, modalities)
        derived = await derived_series(data, window.start)
        if data.spans:
            lost = await asyncio.to_thread(lost_event_deviations, data.spans, data.lines, window)
            lost += await asyncio.to_thread(span_gap_deviations, data.spans, window)
    results = await asyncio.gather(*(backend.series(n, baseline.start, window.end) for n in signals))
    every = [s for batch in results for s in batch] + derived
    found = [deviation(s, window, baseline, signal_spec(s.signal)) for s in every] + lost
    return found + edge_delay_deviations([d for d in found if d.signal == EDGE_GAP])


async def rank_anomalies(
    backend: TelemetryBackend,
    window: Window,
    baseline: Window,
    propagation: float = PROPAGATION,
    modalities: tuple[str, ...] = MODALITIES,
) -> list[ServiceAnomaly]:
    deviations = await collect_deviations(backend, window, baseline, modalities=modalities)
    return rank_services(deviations, await backend.edges(), propagation)
