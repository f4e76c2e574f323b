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
time from it on without a gap is the "after". Error events are not expected events
(errors stopping is recovery, not a fault). Parameters chosen on the TrainTicket dev day.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from telemetry.analysis.derived import BUCKET_S, ERROR_LEVELS, bucket, contiguous
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
    templates: dict[tuple[str, int], Template] = {}
    tagged: list[tuple[tuple[str, str], str, int]] = []
    for r in logs:
        under = span_of_log.get(r.span_id) if r.span_id else None
        if under is None or r.level.upper() in ERROR_LEVELS:
            continue
        tpl = drains[under.service].add(r.message)
        templates[(under.service, tpl.id)] = tpl
        tagged.append((entry(under), under.service, tpl.id))
    for own, service, tid in tagged:  # labelled after all lines are seen: a template's final text
        events[own].add(f"logs '{templates[(service, tid)].text[:MAX_LABEL]}'")
    return [
        _Request(s.service, s.operation, s.start, frozenset(events.get((s.trace_id, s.span_id), ())))
        for s in spans
        if entry(s) == (s.trace_id, s.span_id)
    ]


def _best_loss(before: list[_Request], after: list[_Request]) -> tuple[float, str, float, float] | None:
    """(score, event, share before, share after) of the operation's most lost event, or None."""
    if len(before) < MIN_BEFORE or len(after) < MIN_AFTER:
        return None
    had_before = Counter(e for r in before for e in r.events)
    had_after = Counter(e for r in after for e in r.events)
    best = None
    for event, n in had_before.items():
        expected = n / len(before) * len(after)
        observed = had_after[event]
        if expected < MIN_EXPECTED or observed > LOST_SHARE * expected:
            continue
        score = (expected - observed) / expected**0.5
        if best is None or score > best[0]:
            best = (score, event, n / len(before), observed / len(after))
    return best


def _run_from(buckets: list[float], onset: float) -> list[float]:
    """The buckets from ``onset`` on that follow each other without a gap (ascending input): after a
    gap in the capture nothing says whether the loss went on."""
    run: list[float] = []
    for b in buckets:
        if b < onset:
            continue
        if run and b - run[-1] > BUCKET_S:
            break
        run.append(b)
    return run


def lost_event_deviations(spans: list[Span], logs: list[LogRecord], window: Window) -> list[Deviation]:
    """Per service its most lost event over every operation and onset, as a ``lost_events`` deviation
    (instance: the operation and the event; baseline_median and peak: the share of requests with it
    before and after the onset)."""
    reqs = requests(spans, logs)
    captured = sorted({bucket(r.start) for r in reqs})
    onsets = [b for b in captured if window.start <= b <= window.end - 2 * BUCKET_S]
    by_op: dict[tuple[str, str], list[_Request]] = defaultdict(list)
    for r in reqs:
        by_op[(r.service, r.operation)].append(r)
    best: dict[str, Deviation] = {}
    for onset in onsets:
        stretch = {b for b in contiguous(captured, onset) if b < onset} | set(_run_from(captured, onset))
        for (service, operation), group in by_op.items():
            kept = [r for r in group if bucket(r.start) in stretch and r.start <= window.end]
            before = [r for r in kept if r.start < onset]
            after = [r for r in kept if r.start >= onset]
            found = _best_loss(before, after)
            if found is None or (service in best and best[service].score >= found[0]):
                continue
            score, event, share_before, share_after = found
            best[service] = Deviation(
                service,
                SIGNAL,
                f"{operation}: {event}",
                share_before,
                None,
                len(before),
                len(after),
                share_after,
                share_after,
                score,
                onset,
            )
    return list(best.values())
