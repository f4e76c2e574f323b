"""Robust deviation of a window from its baseline, and when it began.

deviation = (x - median(baseline)) / scale, scale = max(1.4826 MAD, 5% of |median|, the signal's
floor): the median absolute deviation estimates the spread without letting anomalous baseline
minutes inflate it; it tolerates up to half the baseline being anomalous (the IQR only a quarter),
which is what an earlier fault on the same pod minutes before does to a 30-minute baseline
(AS@3 on the Nezha day 0.79 with the IQR, 0.875 with the MAD; AS@1 0.75 with both). The floors
keep a flat baseline from turning noise into a huge number (a signal without a floor of its own gets
1% of the largest value seen). A tail statistic (a per-minute p99) has a heavy upper tail the MAD
does not see: a quiet service's p99 jumps whenever one slow request lands in a minute. Its scale is
also at least the baseline's 95th-percentile excess over the median, read as 1.645 standard
deviations, so spikes the baseline already had are not news (TrainTicket 2023-01-29, tools-only:
AS@3 0.679 -> 0.75, the same at the 90th and 98th percentile; OnlineBoutique unchanged). Only the
symptom direction counts (a CPU drop is not a CPU anomaly). A window's score is its second-largest
deviation, so one stray sample does not make an anomaly. The onset is the first sample of the window
at or above the threshold: the change point an SRE reads as "since".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from telemetry.clock import Window
from telemetry.model import Series
from telemetry.signals import RELATIVE_FLOOR, Signal

MIN_BASELINE_POINTS = 2
ANOMALY_THRESHOLD = 3.0
TAIL_QUANTILE = 0.95
TAIL_Z = 1.645  # the standard normal's 95th percentile


@dataclass
class Deviation:
    service: str
    signal: str
    instance: str
    baseline_median: float | None
    baseline_mad: float | None
    baseline_points: int
    window_points: int
    peak: float | None  # the window's most deviating value (symptom direction)
    last: float | None
    score: float  # >= 0, in scale units
    onset: float | None

    @property
    def anomalous(self) -> bool:
        return self.score >= ANOMALY_THRESHOLD


def _directional(d: np.ndarray, direction: int) -> np.ndarray:
    if direction > 0:
        return np.maximum(d, 0.0)
    if direction < 0:
        return np.maximum(-d, 0.0)
    return np.abs(d)


def deviation(series: Series, window: Window, baseline: Window, sig: Signal) -> Deviation:
    ok = ~np.isnan(series.values)
    ts, vals = series.ts[ok], series.values[ok]
    base = vals[(ts >= baseline.start) & (ts < baseline.end)]
    in_win = (ts >= window.start) & (ts <= window.end)
    win_ts, win = ts[in_win], vals[in_win]
    last = float(win[-1]) if len(win) else None
    if len(base) < MIN_BASELINE_POINTS or len(win) == 0:
        return Deviation(
            series.service, series.signal, series.instance, None, None, len(base), len(win), None, last, 0.0, None
        )
    med = float(np.median(base))
    floor = sig.floor if sig.floor > 0 else 0.01 * float(np.max(np.abs(np.concatenate([base, win]))))
    mad = float(np.median(np.abs(base - med)))
    scale = max(mad * 1.4826, RELATIVE_FLOOR * abs(med), floor, 1e-9)
    if sig.tail:
        scale = max(scale, (float(np.quantile(base, TAIL_QUANTILE)) - med) / TAIL_Z)
    d = _directional((win - med) / scale, sig.direction)
    ordered = np.sort(d)
    score = float(ordered[-2] if len(ordered) >= 2 else ordered[-1])
    peak_i = int(np.argmax(d))
    above = np.nonzero(d >= ANOMALY_THRESHOLD)[0]
    onset = float(win_ts[above[0]]) if len(above) else None
    return Deviation(
        series.service,
        series.signal,
        series.instance,
        med,
        mad,
        len(base),
        len(win),
        float(win[peak_i]),
        last,
        score,
        onset,
    )


def downsample(series: Series, window: Window, points: int = 12) -> list[tuple[float, float]]:
    """At most ``points`` (time, value) pairs over the window: each the mean of its slice of samples."""
    part = series.between(window.start, window.end)
    ok = ~np.isnan(part.values)
    ts, vals = part.ts[ok], part.values[ok]
    if len(ts) <= points:
        return [(float(t), float(v)) for t, v in zip(ts, vals, strict=True)]
    out = []
    for chunk_t, chunk_v in zip(np.array_split(ts, points), np.array_split(vals, points), strict=True):
        out.append((float(chunk_t[0]), float(np.mean(chunk_v))))
    return out
