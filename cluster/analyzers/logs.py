"""A pod's logs: the line that says why (a host that does not resolve, a dependency that refuses
connections, a script's syntax error, an expired certificate), the error lines grouped into Drain
templates (telemetry/analysis/drain.py), a searched term's matches, or a clean log."""

from __future__ import annotations

import re

from cluster.findings import Finding, workload_of_pod
from telemetry.analysis.drain import mine

_ANSI = re.compile(r"\x1b\[[0-9;]*m|\[\d{1,2}(?:;\d{1,2})*m")
_ERROR = re.compile(
    r"\b(error|errors|exception|fail(?:ed|ure)?|fatal|panic|refused|denied|unable|cannot|could not|expired|"
    r"traceback|critical|timed? ?out|not known)\b",
    re.I,
)
# (kind, category, how the cause reads, the line that shows it, where the name of the other side is)
SIGNATURES: tuple[tuple[str, str, str, re.Pattern[str], re.Pattern[str] | None], ...] = (
    (
        "dns_failure",
        "network",
        "name resolution fails{for_host}: the host name does not resolve",
        re.compile(
            r"NameResolutionError|Name or service not known|no such host|could not resolve|Temporary failure in name "
            r"resolution|nodename nor servname|UnknownHostException",
            re.I,
        ),
        re.compile(r"host='([^']+)'|lookup ([\w.-]+)|UnknownHostException: ([\w.-]+)|resolve host:? '?([\w.-]+)"),
    ),
    (
        "cannot_connect",
        "dependency",
        "it cannot connect to its dependency{for_host}",
        re.compile(
            r"connection refused|ECONNREFUSED|no available connection|could not connect|failed to connect|unable to "
            r"connect|connection timed out|i/o timeout|Connection reset|host\(s\) tried",
            re.I,
        ),
        re.compile(r"tried: ([\w.-]+(?::\d+)?)|connect(?:ion)? to ([\w.-]+(?::\d+)?)|dial tcp ([\w.:-]+)"),
    ),
    ("syntax_error", "code", "its script or query has a syntax error", re.compile(r"syntax error", re.I), None),
    (
        "cert_expired",
        "config",
        "a TLS certificate has expired",
        re.compile(r"certificate (?:has )?expired|x509: certificate|cert(?:ificate)? is expired", re.I),
        None,
    ),
    (
        "out_of_memory",
        "memory",
        "the process ran out of memory",
        re.compile(r"OutOfMemoryError|out of memory|Cannot allocate memory", re.I),
        None,
    ),
    (
        "permission_denied",
        "config",
        "it is denied access",
        re.compile(r"permission denied|forbidden|unauthorized|access denied", re.I),
        None,
    ),
)
_TOOL_ERROR = re.compile(r"^(?:Command `kubectl .*` failed with return code|Error from server \(|error: )")
MAX_TEMPLATES = 2
# A signature seen this often (lines, or share of the log) is what the pod keeps running into; one line
# in thousands of a healthy pod's log (a probe script's curl) is no cause.
RECURRING_LINES = 3
RECURRING_SHARE = 0.02
MAX_LINE = 240


def _host(pattern: re.Pattern[str] | None, lines: list[str]) -> str:
    if pattern is None:
        return ""
    for line in lines:
        m = pattern.search(line)
        if m:
            return next(g for g in m.groups() if g)
    return ""


def logs(pod: str, namespace: str, text: str, search: str = "") -> list[Finding]:
    component = workload_of_pod(pod) if pod else "logs"
    resource = f"pod {namespace}/{pod}" if namespace else f"pod {pod}"
    lines = [_ANSI.sub("", line).rstrip() for line in text.replace("\r", "").split("\n")]
    lines = [line for line in lines if line.strip() and not line.startswith(("stdout:", "stderr:"))]
    # A failed log call's own words (HolmesGPT records them as output): no line of the application's.
    lines = [line for line in lines if not _TOOL_ERROR.match(line)]
    out: list[Finding] = []
    if search:
        matching = [line for line in lines if search.lower() in line.lower()]
        if matching:
            cause = f"'{search}' appears in the logs: {len(matching)} matching line(s)"
            out.append(Finding(component, resource, "log_match", "unknown", cause, matching[0][:MAX_LINE], "info", 6))
        else:
            cause = f"no log line contains '{search}'"
            out.append(Finding(component, resource, "log_no_match", "unknown", cause, "", "info", 1))
    for kind, category, cause, pattern, host in SIGNATURES:
        hits = [line for line in lines if pattern.search(line)]
        if hits:
            name = _host(host, hits)
            text_cause = cause.format(for_host=f" for host {name}" if name else "")
            text_cause = text_cause.replace("its dependency for host", "its dependency at")
            fact = hits[0].strip()[:MAX_LINE]
            if len(hits) >= RECURRING_LINES or len(hits) / len(lines) >= RECURRING_SHARE:
                out.append(Finding(component, resource, kind, category, text_cause, fact, weight=9))
            else:
                once = f"once in {len(lines)} log lines: {text_cause}"
                out.append(Finding(component, resource, kind, category, once, fact, "info", 2))
    errors = [line.strip() for line in lines if _ERROR.search(line)]
    if errors and not [f for f in out if f.kind != "log_match" and f.severity == "problem"]:
        templates, ids = mine(errors)
        for tpl in [t for t in sorted(templates, key=lambda t: -t.size) if t.size >= 2][:MAX_TEMPLATES]:
            example = errors[ids.index(tpl.id)]
            cause = f"its logs repeat an error ({tpl.size} of {len(lines)} lines): {tpl.text[:120]}"
            out.append(Finding(component, resource, "log_errors", "code", cause, example[:MAX_LINE], weight=3))
    if not errors and lines and not search:
        cause = f"no errors in its logs ({len(lines)} lines, none an error or exception)"
        out.append(Finding(component, resource, "log_clean", "unknown", cause, lines[-1][:MAX_LINE], "ok", 0))
    return out
