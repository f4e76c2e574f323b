"""Where a delay sits: the time calls spend *between* two services, and the service where the slowed
edges meet.

A network delay injected into one pod slows the packets it sends and receives: every edge that
touches it gets slower, while its callers only inherit the wait and its callees serve as fast as
before. A caller starved of CPU shows the same on its own edges (it reads its answers late). So the
evidence is not how slow a service is but how much longer calls take between services, and where
the slowed edges meet:

- ``edge_gap`` (per ``caller->callee`` edge): the caller's view of a call minus the callee's — the
  time spent between them (network, queues, the sidecar, a starved reader). From traces: a caller's
  span minus its child span in the callee, scored call by call (``span_gap_deviations``). Where a backend has per-edge
  latency at both ends (the Nezha days' ``source_50.csv`` / ``destination_50.csv``) it gives the same
  per minute. Each edge's gap is scored against its own baseline like any signal (``deviation.py``).
- ``edge_delay`` (per service): the slowed edges (deviation at the anomaly threshold) are explained
  greedily by the fewest services: the service whose touching slowed edges weigh most — their summed
  deviation times the share of its edges that slowed, so a service with every edge slowed beats a
  caller with one slowed edge among several — takes those edges; the next takes what is left. Its
  score is the mean deviation of the edges it took times that share. One slowed edge between a
  caller and a callee goes to the end with fewer edges: the one whose edges are all slowed.

The ranking (``ranking.py``) scores ``edge_delay`` like any own signal and does not let a callee's
``edge_delay`` excuse its callers: a slowed edge belongs to where the edges meet, not to what is below.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from telemetry.analysis.derived import bucket, contiguous
from telemetry.analysis.deviation import ANOMALY_THRESHOLD, MIN_BASELINE_POINTS, Deviation
from telemetry.clock import Window
from telemetry.model import Span
from telemetry.signals import RELATIVE_FLOOR, SIGNALS

EDGE_GAP = "edge_gap"  # the names are the catalogue's (telemetry/signals.py)
EDGE_DELAY = "edge_delay"
SPANS_SUFFIX = " (spans)"
TAIL_QUANTILE = 0.99
_STARTS = 40
MIN_RUN = 3


def _calls_by_edge(spans: list[Span], window_start: float) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(caller->callee, callee) → (start, gap) of each call in the capture that runs up to the window."""
    keep = set(contiguous(sorted({bucket(s.start) for s in spans}), window_start))
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    calls: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for s in spans:
        parent = by_id.get((s.trace_id, s.parent_id)) if s.parent_id else None
        if parent is not None and parent.service != s.service and bucket(parent.start) in keep:
            calls[(f"{parent.service}->{s.service}", s.service)].append(
                (parent.start, max(parent.duration - s.duration, 0.0))
            )
    return calls


def _onset_split(base: np.ndarray, during: list[tuple[float, float]]) -> tuple[float, int, np.ndarray] | None:
    """The split of the window's calls that best reads as "slower since": (median gap of the calls from
    the split on, the index of its first call, the calls before it with the baseline's). A delay slows
    every call after it starts, so those calls are slow at the median, where a few slow calls scattered
    through the window are not; the calls before the split are the baseline too (a capture that begins
    inside the window has no other). The run from the split holds at least a tenth of the window's
    calls and at least ``MIN_RUN`` (the median of three is slow only if two are: one slow call among two
    would make a sparse edge's median slow); candidate splits are at most ``_STARTS`` evenly spaced
    calls."""
    gaps = np.array([gap for _, gap in during])
    last = len(during) - max(MIN_RUN, math.ceil(0.1 * len(during)))
    if last < 0:
        return None
    starts = sorted({round(i * last / (_STARTS - 1)) for i in range(_STARTS)})
    best: tuple[float, float, int, np.ndarray] | None = None
    for i in starts:
        before = np.concatenate([base, gaps[:i]])
        if len(before) < MIN_BASELINE_POINTS:
            continue
        value = float(np.median(gaps[i:]))
        excess = value - float(np.quantile(before, TAIL_QUANTILE))
        if best is None or excess > best[0]:
            best = (excess, value, i, before)
    return None if best is None else best[1:]


def span_gap_deviations(spans: list[Span], window: Window) -> list[Deviation]:
    """Each edge's gap in the window against the calls before it, call by call: an edge few requests
    take (a checkout's payment) has a handful of calls in the short capture before a fault, too few for
    per-minute medians. The window's figure is the median of its calls since the onset
    (``_onset_split``), so a delay that starts late in the window counts and scattered slow calls do
    not. It is measured above the baseline's slowest calls (their 99th percentile), not its median:
    some edges have a slow mode before any fault (TrainTicket's Java clients wait ~230 ms on a few
    percent of calls, TCP's delayed acknowledgement), and a window that merely has more of those calls
    is not a delay — a delay makes calls slower than the edge ever was. Scale as ``deviation.py``:
    max(1.4826 MAD, 5% of the median, the signal's floor)."""
    floor = SIGNALS[EDGE_GAP].floor
    out = []
    for (edge, callee), made in _calls_by_edge(spans, window.start).items():
        base = np.array([gap for t, gap in made if t < window.start])
        during = sorted((t, gap) for t, gap in made if window.start <= t <= window.end)
        split = _onset_split(base, during)
        if split is None:
            continue
        value, first, before = split
        med = float(np.median(before))
        mad = float(np.median(np.abs(before - med)))
        scale = max(1.4826 * mad, RELATIVE_FLOOR * med, floor)
        reference = float(np.quantile(before, TAIL_QUANTILE))
        score = max(0.0, (value - reference) / scale)
        # "since": the first call from the split on that is itself past the threshold
        onset = next((t for t, gap in during[first:] if gap - reference >= ANOMALY_THRESHOLD * scale), None)
        out.append(
            Deviation(
                callee,
                EDGE_GAP,
                edge + SPANS_SUFFIX,
                med,
                mad,
                len(before),
                len(during),
                value,
                during[-1][1],
                score,
                onset if score >= ANOMALY_THRESHOLD else None,
            )
        )
    return out


def edge_name(instance: str) -> str:
    return instance.removesuffix(SPANS_SUFFIX)


def _ends(edge: str) -> tuple[str, str]:
    caller, _, callee = edge.partition("->")
    return caller, callee


def _weight(mine: set[str], slowed: set[str], edges: dict[str, Deviation]) -> float:
    """How much of the slowed edges a service explains: their summed deviation times the share of its
    edges that slowed."""
    hit = mine & slowed
    return sum(edges[e].score for e in hit) * len(hit) / len(mine)


def _which(taken: int, edges: int) -> str:
    if taken == edges:
        return "its only edge" if edges == 1 else f"all {edges} of its edges"
    return f"{taken} of its {edges} edges"


def edge_delay_deviations(gaps: list[Deviation]) -> list[Deviation]:
    """``edge_delay`` of the services where the slowed edges meet (module docstring), from the
    ``edge_gap`` deviations; each edge counts once, by its most deviating source."""
    edges: dict[str, Deviation] = {}
    for d in gaps:
        name = edge_name(d.instance)
        measured = d.baseline_median is not None and d.window_points > 0
        if measured and "->" in name and (name not in edges or d.score > edges[name].score):
            edges[name] = d
    touching: dict[str, set[str]] = defaultdict(set)
    for name in edges:
        for service in _ends(name):
            touching[service].add(name)
    slowed = {name for name, d in edges.items() if d.score >= ANOMALY_THRESHOLD}
    out: list[Deviation] = []
    while slowed:
        service = max(sorted(touching), key=lambda svc: _weight(touching[svc], slowed, edges))
        taken = sorted(touching[service] & slowed)
        slowed -= set(taken)
        share = len(taken) / len(touching[service])
        devs = [edges[e] for e in taken]
        added = [d.peak - d.baseline_median for d in devs if d.peak is not None and d.baseline_median is not None]
        onsets = [d.onset for d in devs if d.onset is not None]
        out.append(
            Deviation(
                service,
                EDGE_DELAY,
                _which(len(taken), len(touching[service])) + f" ({', '.join(taken)})",
                0.0,
                None,
                min(d.baseline_points for d in devs),
                min(d.window_points for d in devs),
                float(np.median(added)) if added else None,
                None,
                float(np.mean([d.score for d in devs])) * share,
                min(onsets, default=None),
            )
        )
    return out
