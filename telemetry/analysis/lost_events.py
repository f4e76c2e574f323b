"""Expected events that stopped: what a service's requests did before the incident and no longer do.

A request a service serves (an *entry span*: a trace's first span, or one whose parent is in another
service) leaves events under it: the log templates written in its spans, the internal operations it
ran, the services it called. A code fault (an exception or a wrong return value injected into a
handler) often shows nowhere else: the service keeps answering at the same speed, its callers log
nothing, but its handler no longer reaches the lines after the fault — on the TrainTicket dev day a
route-service handler logged "Query route by id" under two of three requests and, after an injected
exception, under none, while the requests themselves went on.

Shares of requests, not line counts, so a change in the mix of requests is not a loss. For each
operation and event: p = share of the operation's requests before the onset that had it, E = p x the
requests from the onset on, O = those that had it; the event is *lost* when E >= MIN_EXPECTED and
O <= LOST_SHARE x E, scored (E - O) / sqrt(E), the Poisson deviation of the shortfall. The onset is
unknown, so every 20-s bucket of the window is tried as one (a change point) and the best kept: the
captured time before it without a gap, in the window or the baseline, is the "before"; the captured
time from it on without a gap is the "after". Error and warning events are not
expected events (errors stopping is recovery, not a fault). Parameters chosen on the TrainTicket dev day.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from telemetry.analysis.derived import BUCKET_S, ERROR_LEVELS, bucket
from telemetry.analysis.deviation import Deviation
from telemetry.analysis.drain import Drain, Template
from telemetry.clock import Window
from telemetry.model import LogRecord, Span

SIGNAL = "lost_events"
MIN_BEFORE = 5  # requests of the operation before the onset
MIN_AFTER = 3  # requests of the operation from the onset on
MIN_EXPECTED = 3.0
LOST_SHARE = 0.2
MAX_LABEL = 90
# A warning, like an error, reports the unusual path ("[Get Order By ID Fail][Order not found]"): fewer of
# them is fewer failures, not a handler that stopped.
NOT_EXPECTED_LEVELS = ERROR_LEVELS | {"WARN", "WARNING"}
# A line's head names what it is; the rest of a long line (an object dump) only slows the templating
# and splits one event into many.
TEMPLATED_CHARS = 160


@dataclass(frozen=True)
class _Request:
    service: str
    operation: str
    start: float
    events: frozenset[str]


def _is_error_operation(name: str) -> bool:
    return "error" in name.lower()


def requests(spans: list[Span], logs: list[LogRecord]) -> list[_Request]:
    """Every entry span with the events under it (its service's spans below it, their calls, and the
    log templates written in them)."""
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    entry_of: dict[tuple[str, str], tuple[str, str]] = {}

    def entry(s: Span) -> tuple[str, str]:
        key = (s.trace_id, s.span_id)
        path = []
        while key not in entry_of:
            parent = by_id.get((s.trace_id, s.parent_id)) if s.parent_id else None
            if parent is None or parent.service != s.service:
                entry_of[key] = key
                break
            path.append(key)
            s = parent
            key = (s.trace_id, s.span_id)
        for k in path:
            entry_of[k] = entry_of[key]
        return entry_of[key]

    events: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in spans:
        own = entry(s)
        if own != (s.trace_id, s.span_id) and not _is_error_operation(s.operation):
            events[own].add(f"runs {s.operation}")
        parent = by_id.get((s.trace_id, s.parent_id)) if s.parent_id else None
        if parent is not None and parent.service != s.service:
            events[entry(parent)].add(f"calls {s.service}")
    span_of_log = {s.span_id: s for s in spans}
    drains: dict[str, Drain] = defaultdict(Drain)
    tagged: list[tuple[tuple[str, str], Template]] = []
    for r in logs:
        under = span_of_log.get(r.span_id) if r.span_id else None
        if under is None or r.level.upper() in NOT_EXPECTED_LEVELS:
            continue
        tagged.append((entry(under), drains[under.service].add(r.message[:TEMPLATED_CHARS])))
    for own, tpl in tagged:  # labelled after all lines are seen: a template's final text
        events[own].add(f"logs '{tpl.text[:MAX_LABEL]}'")
    return [
        _Request(s.service, s.operation, s.start, frozenset(events.get((s.trace_id, s.span_id), ())))
        for s in spans
        if entry(s) == (s.trace_id, s.span_id)
    ]


def _stretches(captured: list[float], onsets: list[float]) -> list[tuple[int, int, int]]:
    """Per onset, indexes into ``captured``: (first bucket of the gapless run up to it, the onset's,
    one past the gapless run from it). Before a gap nothing is "before"; after one nothing says whether
    the loss went on."""
    out = []
    for onset in onsets:
        k = captured.index(onset)
        lo = k
        while lo > 0 and captured[lo] - captured[lo - 1] <= BUCKET_S:
            lo -= 1
        hi = k + 1
        while hi < len(captured) and captured[hi] - captured[hi - 1] <= BUCKET_S:
            hi += 1
        out.append((lo, k, hi))
    return out


def _op_losses(
    group: list[_Request], slot: dict[float, int], n_slots: int, stretches: list[tuple[int, int, int]]
) -> tuple[float, int, str, float, float, int, int] | None:
    """The operation's most lost event over every onset: (score, onset index, event, share before,
    share after, requests before, requests after), from cumulative counts per bucket."""
    events = sorted({e for r in group for e in r.events})
    if not events:
        return None
    column = {e: i for i, e in enumerate(events)}
    had = np.zeros((n_slots, len(events)))
    served = np.zeros(n_slots)
    for r in group:
        b = slot[bucket(r.start)]
        served[b] += 1
        for e in r.events:
            had[b, column[e]] += 1
    cum_had = np.vstack([np.zeros(len(events)), np.cumsum(had, axis=0)])
    cum_served = np.concatenate([[0.0], np.cumsum(served)])
    best = None
    for n, (lo, k, hi) in enumerate(stretches):
        n_before, n_after = cum_served[k] - cum_served[lo], cum_served[hi] - cum_served[k]
        if n_before < MIN_BEFORE or n_after < MIN_AFTER:
            continue
        before, after = cum_had[k] - cum_had[lo], cum_had[hi] - cum_had[k]
        expected = before / n_before * n_after
        lost = (expected >= MIN_EXPECTED) & (after <= LOST_SHARE * expected)
        if not lost.any():
            continue
        scores = np.where(lost, (expected - after) / np.sqrt(np.maximum(expected, 1e-9)), -1.0)
        i = int(np.argmax(scores))
        if best is None or scores[i] > best[0]:
            best = (
                float(scores[i]),
                n,
                events[i],
                before[i] / n_before,
                after[i] / n_after,
                int(n_before),
                int(n_after),
            )
    return best


def lost_event_deviations(spans: list[Span], logs: list[LogRecord], window: Window) -> list[Deviation]:
    """Per service its most lost event over every operation and onset, as a ``lost_events`` deviation
    (instance: the operation and the event; baseline_median and peak: the share of requests with it
    before and after the onset)."""
    reqs = [r for r in requests(spans, logs) if r.start <= window.end]
    captured = sorted({bucket(r.start) for r in reqs})
    onsets = [b for b in captured if window.start <= b <= window.end - 2 * BUCKET_S]
    stretches = _stretches(captured, onsets)
    slot = {b: i for i, b in enumerate(captured)}
    by_op: dict[tuple[str, str], list[_Request]] = defaultdict(list)
    for r in reqs:
        by_op[(r.service, r.operation)].append(r)
    best: dict[str, Deviation] = {}
    for (service, operation), group in by_op.items():
        found = _op_losses(group, slot, len(captured), stretches)
        if found is None or (service in best and best[service].score >= found[0]):
            continue
        score, n, event, share_before, share_after, n_before, n_after = found
        best[service] = Deviation(
            service,
            SIGNAL,
            f"{operation}: {event}",
            share_before,
            None,
            n_before,
            n_after,
            share_after,
            share_after,
            score,
            onsets[n],
        )
    return list(best.values())
