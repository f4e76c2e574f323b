"""The ``raydiag`` command: serve, db upgrade, trace, ask, config check."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from deployments.config import ConfigError, load_config


def _cmd_serve(args: argparse.Namespace) -> int:
    from ray import serve

    from deployments.app import build_app
    from deployments.runtime import start_ray, start_serve

    cfg = load_config(args.config)
    start_ray(cfg)
    start_serve(cfg)
    serve.run(build_app(cfg), name="raydiag", route_prefix="/", blocking=False)
    base = f"http://{cfg.server.host}:{cfg.server.port}"
    print(f"raydiag is ready on {base}", flush=True)
    if cfg.server.direct_ingress:
        lo, hi = cfg.server.direct_ingress_ports
        print(f"ingress replicas also serve HTTP directly on ports {lo}-{hi} (the first replica: {lo})", flush=True)
    print("Try:", flush=True)
    print(
        f"  curl -N -H 'Content-Type: application/json' -X POST {base}/api/chat "
        '-d \'{"Id": "demo-1", "Question": "MySQL connection pool exhausted HikariCP diagnosis"}\'',
        flush=True,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    from deployments.stopping import drain

    print("stopping: new chats get 503, runs in flight finish…", flush=True)
    seen = drain("raydiag", args.drain_timeout)
    print(f"drained in {seen['waited_s']}s ({seen['in_flight']} runs left); flushing the audit trail…", flush=True)
    serve.shutdown()
    import ray

    ray.shutdown()
    return 0


def _cmd_stop(args: argparse.Namespace) -> int:
    """Gracefully stop an application on a running cluster (``serve deploy`` installs)."""
    import ray

    from deployments.runtime import ray_env
    from deployments.stopping import graceful_stop

    cfg = load_config(args.config)
    ray_env(cfg)
    ray.init(address=args.address or cfg.ray.address or "auto", log_to_driver=False)
    seen = graceful_stop(args.app, args.drain_timeout)
    print(json.dumps({"app": args.app, **seen}))
    return 0 if seen["drained"] else 1


def _cmd_db_upgrade(args: argparse.Namespace) -> int:
    from audit.migrate import upgrade

    cfg = load_config(args.config)
    upgrade(cfg.audit.db_url, args.revision)
    print(f"audit schema upgraded to {args.revision} at {cfg.audit.db_url.split('@')[-1]}")
    return 0


def format_timeline(trace: dict[str, Any]) -> str:
    run = trace["run"]
    lines = [
        f"run {run['run_id']}  session {run['session_id']}  status {run['status']}  "
        f"outcome {run.get('release_outcome')}  tokens {run.get('total_token_count')}  "
        f"{run.get('total_duration_ms')} ms",
        f"query: {run['query']}",
        "",
        f"{'seq':>4}  {'phase':<10} {'event':<26} {'status':<12} details",
    ]
    for ev in trace["timeline"]:
        details = json.dumps(ev.get("details") or {}, ensure_ascii=False)
        if len(details) > 90:
            details = details[:87] + "..."
        lines.append(
            f"{ev['sequence_no']:>4}  {ev['phase']:<10} {ev['event_type']:<26} {ev.get('status') or '':<12} {details}"
        )
    s = trace["summary"]
    lines += [
        "",
        "stored/emitted  "
        + "  ".join(f"{k} {v}/{(s['emitted'] or {}).get(k, '?')}" for k, v in s["stored"].items())
        + f"  complete={s['complete']}  tokens_reconciled={s['tokens_reconciled']}",
    ]
    return "\n".join(lines)


def _cmd_trace(args: argparse.Namespace) -> int:
    from audit.db import make_engine
    from audit.trace_reader import TraceNotFound, TraceReader

    cfg = load_config(args.config)
    reader = TraceReader(make_engine(cfg.audit.db_url))
    try:
        trace = reader.trace(reader.session_of(args.run_id), args.run_id)
    except TraceNotFound as err:
        print(f"raydiag trace: {err}", file=sys.stderr)
        return 1
    print(json.dumps(trace, ensure_ascii=False, indent=2) if args.json else format_timeline(trace))
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    import uuid

    import httpx

    from deployments.sse import parse
    from harness.render import render_content

    cfg = load_config(args.config)
    url = args.url or f"http://{cfg.server.host}:{cfg.server.port}"
    body = {"Id": args.session or f"cli-{uuid.uuid4().hex[:12]}", "Question": args.question}
    outcome = "FAILED"
    with httpx.Client(timeout=None) as client, client.stream("POST", f"{url}/api/chat", json=body) as resp:
        if resp.status_code != 200:
            resp.read()
            print(f"error {resp.status_code}: {resp.text}", file=sys.stderr)
            return 1
        buf = ""
        for chunk in resp.iter_text():
            buf += chunk
            while "\n\n" in buf:
                block, buf = buf.split("\n\n", 1)
                for name, data in parse(block + "\n\n"):
                    if name == "metadata":
                        print(f"session {data['session_id']}  run {data['run_id']}")
                    elif name == "status":
                        print(f"… {data['code']} {data.get('detail', '')}")
                    elif name == "content":
                        print("\n" + render_content(data["content_type"], data["payload"]))
                    elif name == "failure":
                        print(f"\nFAILED {data['error_code']}: {data['message']}")
                    elif name == "done":
                        outcome = data["outcome"]
                        print(f"\ndone: {outcome}")
    return 0 if outcome != "FAILED" else 2


def _cmd_models_pull(args: argparse.Namespace) -> int:
    from cli.model_pull import ModelPullError, pull

    cfg = load_config(args.config)
    if args.name is None and cfg.llm.backend in ("none", "openai", "scripted"):
        print(f"llm.backend is '{cfg.llm.backend}': no model to pull")
        return 0
    name = args.name or cfg.llm.model
    try:
        path = pull(name, Path(cfg.llm.model_root))
    except ModelPullError as err:
        print(f"raydiag models pull: {err}", file=sys.stderr)
        return 1
    print(f"{name} ready at {path}")
    return 0


def _cmd_models_list(args: argparse.Namespace) -> int:
    from cli.model_pull import MODELS, is_pulled

    cfg = load_config(args.config)
    for name, src in MODELS.items():
        state = "pulled" if is_pulled(Path(cfg.llm.model_root), name) else "not pulled"
        print(f"{name:32} {state:11} {src.license}")
    return 0


def _cmd_ingest(args: argparse.Namespace) -> int:
    from rag.embedders import cached_embedder_for, embedder_name
    from rag.ingest import Document, find_documents, ingest_documents, pack_documents
    from rag.packs import load_packs, loaded_packs, record_loaded, select_packs
    from rag.store import KnowledgeStore

    if not args.paths and not args.packs:
        print("name documents to ingest, or --pack NAME / --packs default|all (raydiag packs lists them)")
        return 2
    cfg = load_config(args.config)
    try:
        packs = select_packs(args.packs or [], load_packs())
    except KeyError as err:
        print(err.args[0], file=sys.stderr)
        return 2
    for pack in packs:
        if not pack.available:
            print(f"pack {pack.name!r}: its documents are not here ({pack.root}); left out", file=sys.stderr)
    packs = [p for p in packs if p.available]
    embedder = cached_embedder_for(cfg.search)
    # Milvus Lite's data dir belongs to one process: ingest before `serve`, or against a Milvus server.
    s = cfg.search
    store = KnowledgeStore(s.milvus_uri, s.collection, embedder.dim, embedder.sparse, rebuild_outdated=True)
    if store.rebuilt:
        print(f"the collection {s.collection!r} had an older schema: rebuilt it empty", file=sys.stderr)
    started = time.perf_counter()
    digests = {p.name: p.digest(f"{s.chunk_max_chars}:{embedder_name(s)}") for p in packs}
    before = loaded_packs(s.milvus_uri, s.collection)
    try:
        # A pack whose digest the collection's manifest records, with as many chunks filed under it as it
        # recorded, is there already: a later `make run` re-reads the files, it does not re-insert them.
        unchanged = [
            p
            for p in packs
            if p.domain
            and not store.rebuilt
            and before.get(p.name, {}).get("digest") == digests[p.name]
            and store.count(p.domain) == before[p.name].get("chunks")
        ]
        changed = [p for p in packs if p not in unchanged]
        for pack in changed:
            if pack.domain:
                store.delete_domain(pack.domain)
        documents = [Document(f, args.domain) for p in args.paths for f in find_documents(Path(p))]
        report = ingest_documents(documents + pack_documents(changed), store, embedder, max_chars=s.chunk_max_chars)
        counts = {p.name: store.count(p.domain) if p.domain else None for p in changed}
    finally:
        store.close()
    record_loaded(
        s.milvus_uri,
        s.collection,
        {
            p.name: {"digest": digests[p.name], "chunks": counts[p.name], "commit": p.commit, "license": p.license}
            for p in changed
        },
    )
    cached = getattr(embedder, "hits", None)
    kept = f"; {len(unchanged)} packs unchanged, not re-ingested" if unchanged else ""
    print(
        f"ingested {report.documents} documents as {report.chunks} chunks in {time.perf_counter() - started:.0f} s "
        f"({report.skipped} empty skipped, {report.renamed} named by their folder: another file had their name"
        + (f"; {cached} chunks' embeddings from the cache" if cached is not None else "")
        + f"{kept}); packs: {', '.join(p.name for p in packs) or 'none'}; "
        f"the collection holds {report.collection_total} chunks"
    )
    return 0


def _cmd_packs(args: argparse.Namespace) -> int:
    from rag.packs import load_packs, loaded_packs

    cfg = load_config(args.config)
    loaded = loaded_packs(cfg.search.milvus_uri, cfg.search.collection)
    for pack in load_packs().values():
        docs = len(pack.documents()) if pack.available else 0
        state = "loaded" if pack.name in loaded else ("available" if pack.available else "missing")
        print(
            f"{pack.name:30} {'default' if pack.default else '':8} {state:10} {docs:4} docs  "
            f"{pack.license:14} {pack.repository}"
        )
    return 0


def _cmd_eval_retrieval(args: argparse.Namespace) -> int:
    import asyncio
    import tempfile

    from evaluation.retrieval import evaluate, format_table
    from rag.embedders import embedder_for

    cfg = load_config(args.config)
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        print(f"raydiag: {dataset} is not a directory", file=sys.stderr)
        return 2
    embedder = embedder_for(cfg.search)
    with tempfile.TemporaryDirectory(prefix="raydiag-eval-") as scratch:
        # A Milvus server URI is used as is (a scratch collection, dropped after); the embedded default
        # gets a scratch Milvus Lite file so evaluation never touches the service's data dir.
        uri = cfg.search.milvus_uri if "://" in cfg.search.milvus_uri else f"{scratch}/eval.db"
        try:
            result = asyncio.run(
                evaluate(
                    dataset,
                    embedder,
                    uri,
                    split=args.split,
                    fusion=cfg.search.fusion,
                    max_chars=cfg.search.chunk_max_chars,
                )
            )
        except (FileNotFoundError, ValueError) as err:
            print(f"raydiag: {err}", file=sys.stderr)
            return 2
    print(format_table(dataset.name, result))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def _cmd_telemetry_check(args: argparse.Namespace) -> int:
    """What the configured telemetry backend sees: services, signals, logs, call graph, time span, clock."""
    import asyncio

    from telemetry.clock import iso
    from telemetry.factory import build_backend, pinned_clock

    cfg = load_config(args.config)
    settings = cfg.telemetry
    if args.nezha_day:
        settings = settings.model_copy(update={"nezha_days": [*settings.nezha_days, args.nezha_day]})
    try:
        inv = asyncio.run(build_backend(settings).inventory())
    except Exception as err:  # unreachable server, unreadable folder: say which, exit non-zero
        print(f"raydiag telemetry check: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    clock = pinned_clock(settings)
    report = {
        "backend": inv.backend,
        "clock": iso(clock) if clock is not None else "wall clock",
        "services": inv.services,
        "signals": inv.signals,
        "log_services": inv.log_services,
        "call_graph_edges": inv.edges,
        "first": iso(inv.first) if inv.first is not None else None,
        "last": iso(inv.last) if inv.last is not None else None,
        "notes": inv.notes,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"backend {report['backend']}   clock {report['clock']}")
    print(f"data from {report['first'] or '?'} to {report['last'] or '?'}   call graph: {inv.edges} edges")
    for service in inv.services:
        logs = "logs" if service in inv.log_services else "no logs"
        print(f"  {service:28} {logs:8} {', '.join(inv.signals.get(service, []))}")
    for note in inv.notes:
        print(f"note: {note}")
    return 0


def _cmd_eval_rca(args: argparse.Namespace) -> int:
    import asyncio

    from deployments.provenance import stamp
    from evaluation.rca import evaluate, format_table

    cfg = load_config(args.config)
    datasets = [Path(d) for d in args.dataset]
    for dataset in datasets:
        if not dataset.is_dir():
            print(f"raydiag: {dataset} is not a directory", file=sys.stderr)
            return 2
    model = "none (tools only)"
    if args.tools_only:
        diagnose = None
    else:
        diagnose, model = _eval_app(cfg, args.address, args.app)
    provenance = stamp()  # the code the run starts with (files may change during a long run)
    try:
        result = asyncio.run(evaluate(datasets, diagnose, args.delay_min, args.limit, args.concurrency))
    except FileNotFoundError as err:
        print(f"raydiag: {err}", file=sys.stderr)
        return 2
    result.update({"model": model, "dataset": [str(d) for d in datasets], **provenance})
    print(format_table(result))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def _cmd_eval_k8s(args: argparse.Namespace) -> int:
    import asyncio

    from deployments.provenance import stamp
    from evaluation.kubernetes import by_half, evaluate, format_table, load

    cfg = load_config(args.config)
    cases_file = Path(args.cases)
    try:
        cases = load(
            cases_file, Path(args.split) if args.split else None, args.half, args.ids.split(",") if args.ids else None
        )
    except (OSError, ValueError) as err:
        print(f"raydiag: {err}", file=sys.stderr)
        return 2
    if args.scripted:
        cfg = cfg.model_copy(deep=True)
        cfg.llm.backend = "scripted"
    diagnose, model = _eval_app(cfg, args.address, args.app)
    provenance = stamp()  # the code the run starts with
    started = time.time()
    result = asyncio.run(evaluate(cases, cases_file, diagnose, args.concurrency))
    if args.split and args.half == "all" and not args.ids:
        result["by_half"] = by_half(result["cases"], Path(args.split))
    half = "ids" if args.ids else args.label or args.half
    entry = {
        **provenance,
        "model": model,
        "cases_file": str(cases_file),
        "split": args.split,
        "half": half,
        "wall_s": round(time.time() - started),
        **result,
    }
    print(format_table(result))
    if args.out:
        out = Path(args.out)
        whole = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
        whole["default_model"] = load_config(args.config).llm.model  # what `make run` serves
        whole.setdefault("runs", {})[f"{model}/{half}"] = entry
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(whole, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {out} (runs[{model}/{half}])")
    return 0


def _eval_app(cfg: Any, address: str | None, app: str) -> tuple[Any, str]:
    """The running app's ingress (``--address``), or the configured app started here for the evaluation."""
    import socket

    import ray
    from ray import serve

    from deployments.app import build_app
    from deployments.runtime import ray_env, start_ray

    if address:
        ray_env(cfg)
        ray.init(address=address, log_to_driver=False)
        handle = serve.get_app_handle(app)
    else:
        cfg = cfg.model_copy(deep=True)
        cfg.ray.temp_dir = cfg.ray.temp_dir.rstrip("/") + "-eval"  # never the temp dir of a running `raydiag serve`
        start_ray(cfg)
        with socket.socket() as s:  # the evaluation needs no HTTP port: take any free one
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        handle = serve.run(build_app(cfg), name=app, route_prefix=None)

    async def diagnose(session: str, question: str, options: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await handle.diagnose_internal.remote(session, question, options)
        return result

    model = cfg.llm.model if cfg.llm.backend in ("vllm", "openai") else cfg.llm.backend
    return diagnose, model


def _cmd_check_config(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    data = cfg.model_dump()
    data["auth"]["api_keys"] = {tenant: "***" for tenant in data["auth"]["api_keys"]}  # never print a key
    print(json.dumps(data, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raydiag", description="Evidence-grounded incident diagnosis on Ray")
    parser.add_argument("--config", default=None, help="config file (default configs/serve.local.yaml)")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    sv = sub.add_parser("serve", help="start Ray and the service on the configured port (SIGTERM drains, then stops)")
    sv.add_argument("--drain-timeout", type=float, default=120.0, help="longest wait for runs in flight on stop")
    sv.set_defaults(fn=_cmd_serve)

    st = sub.add_parser("stop", help="drain an application on a running cluster, then delete it")
    st.add_argument("--app", default="raydiag")
    st.add_argument("--address", default=None, help="Ray address (default: ray.address, else auto)")
    st.add_argument("--drain-timeout", type=float, default=120.0, help="longest wait for runs in flight")
    st.set_defaults(fn=_cmd_stop)

    db = sub.add_parser("db", help="audit database").add_subparsers(dest="db_command", required=True)
    up = db.add_parser("upgrade", help="apply migrations")
    up.add_argument("revision", nargs="?", default="head")
    up.set_defaults(fn=_cmd_db_upgrade)

    tr = sub.add_parser("trace", help="print a run's timeline")
    tr.add_argument("run_id")
    tr.add_argument("--json", action="store_true", help="print the whole trace as JSON")
    tr.set_defaults(fn=_cmd_trace)

    ask = sub.add_parser("ask", help="ask the running service a question and stream the answer")
    ask.add_argument("question")
    ask.add_argument("--session", default=None)
    ask.add_argument("--url", default=None, help="service URL (default from config)")
    ask.set_defaults(fn=_cmd_ask)

    models = sub.add_parser("models", help="LLM weights").add_subparsers(dest="models_command", required=True)
    mp = models.add_parser("pull", help="download and convert a model (default: the configured one)")
    mp.add_argument("name", nargs="?", default=None)
    mp.set_defaults(fn=_cmd_models_pull)
    models.add_parser("list", help="known models").set_defaults(fn=_cmd_models_list)

    ing = sub.add_parser("ingest", help="chunk, embed and index documents (idempotent per document)")
    ing.add_argument("paths", nargs="*", help="files or folders of Markdown/text documents")
    ing.add_argument(
        "--pack",
        "--packs",
        dest="packs",
        action="append",
        metavar="NAME",
        help="a knowledge pack (knowledge/packs/NAME), or 'default' / 'all'; repeatable",
    )
    ing.add_argument("--domain", default=None, help="knowledge domain (default: front matter or folder name)")
    ing.set_defaults(fn=_cmd_ingest)
    packs = sub.add_parser("packs", help="the knowledge packs: default, loaded into the collection, documents")
    packs.set_defaults(fn=_cmd_packs)

    ev = sub.add_parser("eval", help="evaluations").add_subparsers(dest="eval_command", required=True)
    er = ev.add_parser("retrieval", help="dense / BM25 / hybrid nDCG@10 and recall on a BEIR-layout dataset")
    er.add_argument("--dataset", required=True, help="directory with corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    er.add_argument("--split", default="test", help="qrels split (default test)")
    er.add_argument("--out", default=None, help="write the JSON result here")
    er.set_defaults(fn=_cmd_eval_retrieval)
    rc = ev.add_parser("rca", help="root-cause accuracy on labelled faults (Nezha layout) through the pipeline")
    rc.add_argument(
        "--dataset",
        required=True,
        nargs="+",
        action="extend",
        help="directories with rca_data/<day>/<day>-fault_list.json + metric/ (several: scored pooled and per day)",
    )
    rc.add_argument("--out", default=None, help="write the JSON result here")
    rc.add_argument("--limit", type=int, default=None, help="only the first N faults of each dataset")
    rc.add_argument("--concurrency", type=int, default=2, help="diagnoses in flight at once")
    rc.add_argument("--tools-only", action="store_true", help="score rank_anomalies alone (no model, no app)")
    rc.add_argument("--delay-min", type=float, default=5.0, help="minutes from the injection to the run's clock")
    rc.add_argument("--address", default=None, help="use the app on this running Ray cluster (e.g. auto)")
    rc.add_argument("--app", default="raydiag", help="the Serve application to use or start")
    rc.set_defaults(fn=_cmd_eval_rca)

    k8 = ev.add_parser("k8s", help="recorded Kubernetes cases (HolmesGPT's fixture form) through the pipeline")
    k8.add_argument(
        "--cases", required=True, help="a JSON file of cases: {'cases': [{id, q, about, causes, wrong, tools}]}"
    )
    k8.add_argument("--split", default=None, help="a JSON file with the 'tune' and 'report' id lists")
    k8.add_argument("--half", default="all", choices=["all", "tune", "report"])
    k8.add_argument("--ids", default=None, help="comma-separated case ids (a quick look; not a figure)")
    k8.add_argument("--out", default=None, help="merge the run into this JSON file (runs[model/label])")
    k8.add_argument("--label", default=None, help="the run's name in --out (default: the half)")
    k8.add_argument("--scripted", action="store_true", help="the scripted rules profile: no language model")
    k8.add_argument("--concurrency", type=int, default=1, help="diagnoses in flight at once")
    k8.add_argument("--address", default=None, help="use the app on this running Ray cluster (e.g. auto)")
    k8.add_argument("--app", default="raydiag", help="the Serve application to use or start")
    k8.set_defaults(fn=_cmd_eval_k8s)

    tel = sub.add_parser("telemetry", help="telemetry backends").add_subparsers(dest="telemetry_command", required=True)
    tc = tel.add_parser("check", help="what the configured backend sees: services, signals, time span, clock")
    tc.add_argument("--nezha-day", default=None, help="also read this Nezha day folder (rca_data/<day>)")
    tc.add_argument("--json", action="store_true")
    tc.set_defaults(fn=_cmd_telemetry_check)

    sub.add_parser("check-config", help="validate the config and print it").set_defaults(fn=_cmd_check_config)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return int(args.fn(args))
    except ConfigError as err:
        print(f"raydiag: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
