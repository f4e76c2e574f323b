"""Does the service diagnose? The frozen question set (``benchmarks/data/diagnosis_questions.jsonl``:
incident questions phrased from public alert rules, ITBench and OpsEval, plus greetings and off-topic)
asked one at a time over HTTP/SSE of the running service, as a user asks them.

Starts the service the way ``make run`` does (``raydiag serve`` on the given config, with the model
named by ``--model``), or uses one already running (``--base-url``). Per model it measures:

- ``report_rate`` (DIAGNOSIS_REPORT among incident questions), ``failed``, ``chat_rate_offtopic``;
- ``grounded_rate``: reports whose every reference names a successful tool call of the run (the trace
  API) and whose excerpt is in that call's output, re-read here: telemetry and skill tools are re-run
  on the same arguments and clock, a runbook excerpt must occur in the bundled runbooks;
- ``supported_rate``: released claims whose cited excerpts contain the claim's key terms (identifiers
  such as services, metrics and exception names, numbers, quoted strings; content-word overlap when it
  names none), by a rule of its own (not the harness's verifier);
- speed as a ratio that holds across machines: the engine's single-stream decode rate
  ``decode_tok_per_s`` through the service's /v1 route in the same run, and ``ttr_p50_s x
  decode_tok_per_s`` (the cost of a diagnosis in decoded tokens; target <= 450);
- ``ttr_p50_s``/``ttr_p95_s``, ``output_tokens_p50``, ``model_calls_p50``, peak RSS of the LLM replica.

Each model's entry records its commit and command; entries of other models in the results file stay.

    python benchmarks/diagnosis_quality.py [--model qwen2.5-coder-1.5b-instruct] [--ids q01,q02,c01]

With ``--ids`` (a model too slow for the whole set on this machine) the entry also holds the other
models' figures on the same questions, from their full runs' rows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.sse_load import free_port  # noqa: E402
from deployments.provenance import stamp  # noqa: E402
from deployments.sse import parse  # noqa: E402
from harness.scope import RunScope  # noqa: E402

QUESTIONS = ROOT / "benchmarks" / "data" / "diagnosis_questions.jsonl"
OUT = ROOT / "benchmarks" / "results" / "diagnosis_quality.json"
RUNBOOKS = ROOT / "knowledge" / "runbooks"
TARGET_COST_TOKENS = 450

# -- the independent support rule ------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_.:/][A-Za-z0-9]+)+")  # payment-service, hikaricp_connections_active
_CAMEL = re.compile(r"\b(?:[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z][A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*)\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_QUOTE = re.compile(r"[\"'“”‘’「」]([^\"'“”‘’「」]{3,80})[\"'“”‘’「」]")
_WORD = re.compile(r"[a-z]{4,}")
_CJK = re.compile(r"[\u4e00-\u9fff]+")
_STOP = set(
    "this that with from have been were there their which when what into than then they them also only very "
    "more most such some same other over under after before about because could would should shows showed "
    "indicates indicate likely root cause service".split()
)


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower()).strip()


def key_terms(claim: str) -> list[str]:
    """What a claim asserts that its evidence must also say: identifiers, numbers of 2+ digits, quotes."""
    terms = [t for t in _IDENT.findall(claim) if not t.replace(".", "").isdigit()]
    terms += _CAMEL.findall(claim)
    terms += [n for n in _NUMBER.findall(claim) if len(n.replace(".", "")) >= 2]
    terms += _QUOTE.findall(claim)
    return sorted({norm(t) for t in terms if t.strip()})


def _number_forms(term: str) -> list[str]:
    return [term, term.rstrip("0").rstrip(".")] if re.fullmatch(r"\d+\.\d+", term) else [term]


def content_overlap(claim: str, cited: str) -> float:
    low = norm(claim)
    words = {w for w in _WORD.findall(low) if w not in _STOP}
    words |= {run[i : i + 2] for run in _CJK.findall(low) for i in range(len(run) - 1)}
    if not words:
        return 0.0
    return sum(w in cited for w in words) / len(words)


def names_only(claim: str, terms: list[str]) -> bool:
    """A claim that is nothing but identifiers ("payment-service", a metric or alert name): it occurs in
    its evidence by construction and asserts nothing, so it is not a supported finding."""
    if any(t[0].isdigit() for t in terms) or _QUOTE.search(claim):
        return False  # a value or a quote is an assertion
    rest = norm(claim)
    for term in sorted(terms, key=len, reverse=True):
        rest = rest.replace(term, " ")
    words = [w for w in _WORD.findall(rest) if w not in _STOP]
    return not words and not any(len(run) >= 2 for run in _CJK.findall(rest))


def claim_supported(claim: str, excerpts: list[str]) -> bool:
    cited = norm(" ".join(excerpts))
    if not cited:
        return False
    terms = key_terms(claim)
    if terms and names_only(claim, terms):
        return False
    if terms:
        return all(any(form in cited for form in _number_forms(t)) for t in terms)
    return content_overlap(claim, cited) >= 0.5


# -- the independent grounding check ------------------------------------------------------------------


class OutputReader:
    """Re-reads what a cited tool call returned: the run's tools are re-run on the recorded arguments
    at the service's clock (telemetry and skills are deterministic files); runbook excerpts are looked
    for in the runbooks themselves (the search deployment holds the Milvus Lite directory)."""

    def __init__(self, config: Path) -> None:
        from deployments.config import load_config, resolve_paths
        from harness.tools.read_skill import load_skills
        from harness.wiring import service_clock, tool_factory

        cfg = resolve_paths(load_config(config), ROOT)
        self.clock = service_clock(cfg.telemetry)
        self.factory = tool_factory(cfg.telemetry, load_skills(ROOT / "knowledge" / "skills"), None)
        self.runbooks = norm(" ".join(p.read_text(encoding="utf-8") for p in sorted(RUNBOOKS.rglob("*.md"))))
        self.cache: dict[str, str] = {}

    async def output(self, tool_name: str, params: dict[str, Any], started: dict[str, Any]) -> str | None:
        """``started``: the run's RUN_STARTED details (its clock and the incident start it read from
        the question), so the tools see the window the run saw."""
        if tool_name == "lookup_knowledge":
            return self.runbooks
        as_of = _epoch(started.get("as_of")) or self.clock()
        scope = RunScope(as_of=as_of, incident_start=_epoch(started.get("incident_start")), telemetry=None)
        tool = next((t for t in self.factory(scope) if t.name == tool_name), None)
        if tool is None:
            return None
        key = tool_name + json.dumps([params, started.get("as_of"), started.get("incident_start")], sort_keys=True)
        if key not in self.cache:
            result = await tool.run(params)
            self.cache[key] = norm(" ".join(_strings(result.output))) if result.status == "success" else ""
        return self.cache[key]


def _epoch(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else None


def _strings(value: Any) -> list[str]:
    """Every string and number in a tool's JSON output: an excerpt is a span of one of them."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [str(value)] if value is not None else []


def _excerpt_in(excerpt: str, output: str) -> bool:
    text = norm(excerpt).removesuffix("…").removesuffix("...").strip()
    # A runbook chunk's excerpt may keep its markdown; compare without it.
    plain = re.sub(r"[#*`>|]", "", text)
    return bool(text) and (text in output or re.sub(r"\s+", " ", plain).strip() in re.sub(r"[#*`>|]", "", output))


async def grounded(payload: dict[str, Any], trace: dict[str, Any], reader: OutputReader) -> tuple[int, int]:
    """(references bound to a real call with the excerpt in its output, references)."""
    calls = {str(t["tool_call_id"]): t for t in trace.get("toolInvocations") or []}
    started = next((e["details"] or {} for e in trace.get("timeline") or [] if e["event_type"] == "RUN_STARTED"), {})
    ok = 0
    refs = payload.get("references") or []
    for ref in refs:
        call = calls.get(str(ref.get("tool_call_id")))
        if call is None or not call.get("success"):
            continue
        output = await reader.output(call["tool_name"], call.get("input_params") or {}, started)
        if output is not None and _excerpt_in(ref.get("excerpt") or "", output):
            ok += 1
    return ok, len(refs)


def supported(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Each released claim, its key terms and whether its cited excerpts carry them."""
    refs = payload.get("references") or []
    items = (payload.get("report") or {}).get("analysis") or []
    out = []
    for item in items:
        keys = set(item.get("evidence_keys") or [])
        keys |= {k.split("#")[0] for k in keys}
        excerpts = [r.get("excerpt") or "" for r in refs if r.get("source") in keys]
        text = item.get("text") or ""
        out.append(
            {
                "text": text[:240],
                "evidence_keys": sorted(item.get("evidence_keys") or []),
                "terms": key_terms(text),
                "supported": claim_supported(text, excerpts),
            }
        )
    return out


# -- the service ------------------------------------------------------------------------------------


def start_service(config: Path, model: str, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`raydiag serve` on the config with this model, its own port, audit database and Ray temp dir."""
    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    port = free_port()
    data.setdefault("server", {}).update({"host": "127.0.0.1", "port": port})
    data.setdefault("llm", {})["model"] = model
    data.setdefault("ray", {})["temp_dir"] = str(work / "ray")
    data.setdefault("audit", {}).update(
        {"db_url": f"sqlite:///{work / 'audit.db'}", "spill_path": str(work / "spill.jsonl")}
    )
    cfg = work / "serve.yaml"
    cfg.write_text(yaml.safe_dump(data), encoding="utf-8")
    cli = [sys.executable, "-m", "cli.main", "--config", str(cfg)]
    subprocess.run([*cli, "models", "pull", model], check=True, cwd=ROOT)
    subprocess.run([*cli, "db", "upgrade"], check=True, cwd=ROOT, capture_output=True)
    log = (work / "serve.log").open("wb")
    proc = subprocess.Popen([*cli, "serve"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"raydiag serve exited with {proc.returncode}; see {work / 'serve.log'}")
        try:
            health = httpx.get(base + "/healthz", timeout=5)
            if health.status_code == 200 and health.json().get("status") == "ok":
                return proc, base
        except httpx.HTTPError:
            pass
        time.sleep(5)
    proc.terminate()
    raise SystemExit("the service did not become healthy in 900 s")


def stop_service(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)  # `raydiag serve` shuts Serve and Ray down on Ctrl-C
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def llm_replica_rss() -> int:
    """Resident bytes of the LLM replica's process (and its engine core children)."""
    total = 0
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if "ServeReplica:raydiag:llm" in cmd:
                total += p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


# -- measuring ----------------------------------------------------------------------------------------


async def decode_rate(client: httpx.AsyncClient) -> float:
    """Single-stream decode tokens/s of the engine behind the service: stream a long answer and divide
    the tokens after the first by the time after the first (prefill excluded)."""
    body = {
        "messages": [{"role": "user", "content": "Write a long, detailed essay about relational databases."}],
        "max_tokens": 96,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    rates = []
    for _ in range(2):
        first = last = None
        tokens = 0
        async with client.stream("POST", "/v1/chat/completions", json=body) as r:
            r.raise_for_status()
            async for line in r.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    tokens = chunk["usage"]["completion_tokens"]
                if chunk.get("choices") and chunk["choices"][0]["delta"].get("content"):
                    last = time.perf_counter()
                    first = first or last
        if first and last and last > first and tokens > 1:
            rates.append((tokens - 1) / (last - first))
    return round(max(rates), 2) if rates else 0.0


async def ask(client: httpx.AsyncClient, question: dict[str, Any], reader: OutputReader) -> dict[str, Any]:
    session = f"dq-{question['id']}-{uuid.uuid4().hex[:8]}"
    start = time.perf_counter()
    ttr = None
    chunks: list[str] = []
    async with client.stream("POST", "/api/chat", json={"Id": session, "Question": question["question"]}) as r:
        if r.status_code != 200:
            return {"id": question["id"], "kind": question["kind"], "error": f"HTTP {r.status_code}"}
        async for text in r.aiter_text():
            chunks.append(text)
            if ttr is None and "event: content" in "".join(chunks[-2:]):
                ttr = time.perf_counter() - start
    elapsed = time.perf_counter() - start
    events = parse("".join(chunks))
    content = next((d for n, d in events if n == "content"), None)
    done = next((d for n, d in events if n == "done"), {})
    meta = next((d for n, d in events if n == "metadata"), {})
    row: dict[str, Any] = {
        "id": question["id"],
        "kind": question["kind"],
        "lang": question["lang"],
        "content_type": content.get("content_type") if content else None,
        "outcome": done.get("outcome"),
        "ttr_s": round(ttr if ttr is not None else elapsed, 1),
        "ends_with_done": bool(events) and events[-1][0] == "done",
    }
    trace = {}
    if meta.get("run_id"):
        resp = await client.get(f"/api/diagnosis/{session}/trace", params={"runId": meta["run_id"]})
        trace = resp.json() if resp.status_code == 200 else {}
    run = trace.get("run") or {}
    row["output_tokens"] = run.get("output_token_count")
    row["model_calls"] = run.get("model_call_count")
    if content and content.get("content_type") == "DIAGNOSIS_REPORT":
        payload = content["payload"]
        row["grounded_refs"], row["refs"] = await grounded(payload, trace, reader)
        row["claim_checks"] = supported(payload)
        row["supported_claims"] = sum(c["supported"] for c in row["claim_checks"])
        row["claims"] = len(row["claim_checks"])
        row["excerpts"] = [
            (r.get("tool_call_id"), r.get("source"), (r.get("excerpt") or "")[:200])
            for r in payload.get("references") or []
        ]
        row["root_causes"] = [c.get("component") for c in payload.get("root_causes") or []]
        row["conclusion"] = (payload.get("report") or {}).get("conclusion", {}).get("text", "")[:200]
    elif content and content.get("content_type") == "SAFE_FALLBACK":
        row["fallback_type"] = content["payload"].get("fallback_type")
    return row


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summarize(rows: list[dict[str, Any]], decode: float) -> dict[str, Any]:
    incident = [r for r in rows if r["kind"] == "incident"]
    chat = [r for r in rows if r["kind"] == "chat"]
    reports = [r for r in incident if r.get("content_type") == "DIAGNOSIS_REPORT"]
    claims = sum(r["claims"] for r in reports)
    ttr = [r["ttr_s"] for r in incident if "error" not in r]
    ttr_p50 = pct(ttr, 0.5)

    def rate(n: int, d: int) -> float | None:
        return round(n / d, 3) if d else None

    return {
        "incident_questions": len(incident),
        "chat_questions": len(chat),
        "report_rate": rate(len(reports), len(incident)),
        "fallbacks": sum(r.get("content_type") == "SAFE_FALLBACK" for r in incident),
        "failed": sum(r.get("outcome") == "FAILED" or "error" in r for r in rows),
        "streams_without_done": sum(not r.get("ends_with_done") for r in rows),
        "incident_answered_as_chat": sum(r.get("content_type") == "CHAT_ANSWER" for r in incident),
        "chat_rate_offtopic": rate(sum(r.get("content_type") == "CHAT_ANSWER" for r in chat), len(chat)),
        "grounded_rate": rate(sum(r["grounded_refs"] == r["refs"] for r in reports), len(reports)),
        "grounded_references": f"{sum(r['grounded_refs'] for r in reports)}/{sum(r['refs'] for r in reports)}",
        "supported_rate": rate(sum(r["supported_claims"] for r in reports), claims),
        "released_claims": claims,
        "decode_tok_per_s": decode,
        "ttr_p50_s": ttr_p50,
        "ttr_p95_s": pct(ttr, 0.95),
        "cost_tokens": round(ttr_p50 * decode, 1) if ttr_p50 is not None else None,
        "cost_target_tokens": TARGET_COST_TOKENS,
        "output_tokens_p50": pct([r["output_tokens"] for r in incident if r.get("output_tokens") is not None], 0.5),
        "model_calls_p50": pct([r["model_calls"] for r in incident if r.get("model_calls") is not None], 0.5),
    }


async def measure(base: str, questions: list[dict[str, Any]], config: Path) -> dict[str, Any]:
    reader = OutputReader(config)
    rows: list[dict[str, Any]] = []
    peak_rss = llm_replica_rss()
    async with httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(600, connect=30)) as client:
        decode = await decode_rate(client)
        print(f"decode {decode} tok/s", flush=True)
        for q in questions:
            row = await ask(client, q, reader)
            peak_rss = max(peak_rss, llm_replica_rss())
            rows.append(row)
            print(json.dumps(row, ensure_ascii=False)[:300], flush=True)
    return {**summarize(rows, decode), "llm_replica_peak_rss_gib": round(peak_rss / 2**30, 2), "cases": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "serve.local.yaml"))
    parser.add_argument("--model", default=None, help="llm.model for this run (default: the config's)")
    parser.add_argument("--base-url", default=None, help="a running service instead of starting one")
    parser.add_argument("--ids", default=None, help="comma-separated question ids (default: all)")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    config = Path(args.config)
    default_model = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("llm", {}).get("model")
    model = args.model or default_model
    questions = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.ids:
        wanted = set(args.ids.split(","))
        questions = [q for q in questions if q["id"] in wanted]
    proc = None
    with tempfile.TemporaryDirectory(prefix="raydiag-dq-") as tmp:
        if args.base_url:
            base = args.base_url
        else:
            proc, base = start_service(config, model, Path(tmp))
        try:
            started = time.perf_counter()
            result = asyncio.run(measure(base, questions, config))
            result["wall_s"] = round(time.perf_counter() - started, 1)
        finally:
            if proc is not None:
                stop_service(proc)
    entry = {
        "model": model,
        "questions": len(questions),
        "question_set": str(QUESTIONS.relative_to(ROOT)),
        **result,
        **stamp(),
        "command": "python benchmarks/diagnosis_quality.py " + " ".join(sys.argv[1:]),
    }
    out = Path(args.out)
    whole = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    if args.ids:
        # A subset (a slower model): the other models' figures on the same questions, from their rows.
        entry["subset_ids"] = [q["id"] for q in questions]
        entry["others_on_same_questions"] = {
            name: summarize([r for r in other["cases"] if r["id"] in entry["subset_ids"]], other["decode_tok_per_s"])
            for name, other in (whole.get("models") or {}).items()
            if name != model and "subset_ids" not in other
        }
    whole["default_model"] = default_model
    whole.setdefault("models", {})[model] = entry
    out.write_text(json.dumps(whole, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    keys = (
        "report_rate",
        "grounded_rate",
        "supported_rate",
        "chat_rate_offtopic",
        "failed",
        "ttr_p50_s",
        "cost_tokens",
    )
    print({k: entry[k] for k in keys})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
