"""The logical signals every backend maps onto, with what a deviation of each means.

``direction``: +1 a rise is the symptom, -1 a drop, 0 either. ``floor``: the smallest change that
matters, in the signal's unit, so a near-constant baseline does not turn noise into a huge deviation
(domain priors, not fitted to any incident). ``own``: whether an anomaly is the service's own
(resources, the latency it serves, its errors, callers' view of it) or mostly its callees'
(``client_latency_*``: the latency of the calls it makes), which the ranking does not blame on it.
``weight``: how much the ranking trusts the signal as evidence of a fault in the service itself.
``tail``: the signal is itself a tail statistic (a per-minute p99 is decided by the one or two slowest
requests of the minute), so its baseline spread is read in the baseline's tail, not its middle
(``telemetry/analysis/deviation.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Signal:
    name: str
    unit: str
    direction: int
    floor: float
    own: bool
    weight: float
    description: str
    tail: bool = False


SIGNALS: dict[str, Signal] = {
    s.name: s
    for s in (
        Signal("cpu", "cores", +1, 0.001, True, 1.0, "CPU used by the service's pods"),
        Signal("memory", "bytes", +1, 1 << 20, True, 1.0, "working-set memory of the pods"),
        Signal("latency_p90", "s", +1, 0.01, True, 1.0, "p90 latency of the requests the service serves"),
        Signal("latency_p99", "s", +1, 0.01, True, 1.0, "p99 latency of the requests the service serves", tail=True),
        Signal("error_rate", "%", +1, 1.0, True, 1.0, "share of the service's requests that failed"),
        Signal("throughput", "req/s", 0, 0.5, True, 0.5, "requests the service serves per second"),
        Signal("net_rx", "bytes/s", 0, 1024, True, 0.5, "network bytes received per second"),
        Signal("net_tx", "bytes/s", 0, 1024, True, 0.5, "network bytes sent per second"),
        Signal("call_latency", "s", +1, 0.005, True, 1.0, "latency of calls into the service as its callers see it"),
        # A service's own error lines rising is stronger evidence of a fault in it than a per-pod metric's
        # deviation (p99 of a minute is noisy): chosen on the TrainTicket dev day (docs/telemetry.md).
        Signal("log_errors", "lines", +1, 1.0, True, 8.0, "error-level log lines per 20-s bucket (from its logs)"),
        # An event a service's requests stopped having (lost_events.py) is a code fault's own trace, as
        # strong as its error lines: weight chosen on the TrainTicket dev day, tools-only
        # (AS@1 at 3: 0.464, 4 and 5: 0.5, 8: 0.571, 12: 0.536, 16: 0.5).
        Signal(
            "lost_events",
            "share",
            -1,
            0.0,
            True,
            8.0,
            "share of an operation's requests with an event (a log line, a call) most had before",
        ),
        Signal("span_latency_p90", "s", +1, 0.01, True, 1.0, "p90 duration of the spans it serves (from traces)"),
        # Time a call spends between caller and callee, per edge (analysis/edge_delay.py): an input to
        # edge_delay, not a service's own evidence (a slowed edge is either end's).
        Signal("edge_gap", "s", +1, 0.005, False, 0.0, "caller's view of a call minus the callee's, per edge"),
        Signal(
            "edge_delay",
            "s",
            +1,
            0.005,
            True,
            1.0,
            "median excess wire time of the edges the service sends on (its calls' requests, its answers)",
        ),
        Signal("client_latency_p90", "s", +1, 0.01, False, 0.0, "p90 latency of the calls the service makes"),
        Signal("client_latency_p99", "s", +1, 0.01, False, 0.0, "p99 latency of the calls the service makes"),
    )
}
# Relative floor: a change below this share of the baseline median is noise for every signal.
RELATIVE_FLOOR = 0.05


# A service's calls to its database, as client libraries name them: HikariCP and the other JDBC/R2DBC
# pools, OpenTelemetry's db.client.* (``db_client_connections_pending_requests``) and Go's database/sql
# stats (``go_sql_wait_count_total``). Their deviation says the service waits on its database, which none
# of the resource, error or network signals say. Server-side exporters (``mysql_global_status_…``,
# ``pg_stat_…``) are left out: on the database's own service they say nothing about a dependency.
_DATASTORE = re.compile(r"^(?:hikaricp|jdbc|r2dbc|db_client|go_sql)_")


def is_datastore_signal(name: str) -> bool:
    return bool(_DATASTORE.match(name))


def signal(name: str) -> Signal:
    try:
        return SIGNALS[name]
    except KeyError:
        raise KeyError(f"unknown signal {name!r}; known: {', '.join(SIGNALS)}") from None


def signal_spec(name: str) -> Signal:
    """The catalogue's entry, or a neutral one for a backend's own metric names (the demo's
    ``hikaricp_connections_pending``): either direction counts, and with no floor of its own the
    deviation is floored at 1% of the largest value seen (``telemetry/analysis/deviation.py``)."""
    return SIGNALS.get(name) or Signal(name, "", 0, 0.0, True, 1.0, "a metric of the backend's own")
