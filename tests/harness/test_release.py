"""The release: a report carries only claims the verifier left standing, whatever its verdict says."""

from __future__ import annotations

from harness.contracts import (
    Claim,
    EvidenceBinding,
    ExecutorEvidence,
    FactChecked,
    RecommendedAction,
    RootCause,
    VerifierOutput,
)
from harness.question_scope import QuestionScope
from harness.stages.release import NOT_DRAWN, NOTHING_NAMES, UNSUPPORTED, Release, report
from harness.tools.base import LedgerEntry, ToolResult


def _binding(key: str, tool: str, call_id: str, excerpt: str) -> EvidenceBinding:
    return EvidenceBinding(
        source_type="tool_trace",
        source_id=key,
        tool_name=tool,
        source_invocation_ids=[call_id],
        evidence_excerpt=excerpt,
    )


def _claim(n: int, text: str) -> Claim:
    excerpt = "cartservice ranks 1 of 10: call_latency 0.005 s -> 0.257 s"
    binding = _binding("anomaly:cartservice:2022-08-22T04:27Z", "rank_anomalies", "c1", excerpt)
    return Claim(
        claim_id=f"claim-{n}",
        claim_type="root_cause",
        claim_text=text,
        support_level="direct",
        evidence_bindings=[binding],
    )


DRAFT = ExecutorEvidence(
    diagnosis_summary="The consumers slowed down.",
    claims=[_claim(1, "consumers slowed down"), _claim(2, "downstream data is late")],
    user_facing_answer="The consumers slowed down.",
)


def _verdict(*verifications: str) -> VerifierOutput:
    facts = [
        FactChecked(fact=c.claim_text, is_critical=True, verification=v)  # type: ignore[arg-type]
        for c, v in zip(DRAFT.claims, verifications, strict=True)
    ]
    return VerifierOutput(
        verdict="PASS", groundedness_score=0.5, critical_fact_count=2, facts_checked=facts, rationale=""
    )


def test_a_pass_whose_every_fact_is_unsupported_is_no_report() -> None:
    """The 0.5B verifier said PASS beside the rules' failures on the diagnosis set: none stands, so the
    restated symptoms are not released (before: all of them were)."""
    release = report(DRAFT, {}, "en", _verdict("no_evidence", "no_evidence"))
    assert release.content_type == "SAFE_FALLBACK"
    assert release.payload.confirmed == []  # type: ignore[union-attr]
    # It says why; no instruction was quoted, so the instruction guard's sentence would be untrue.
    assert release.payload.gaps == [UNSUPPORTED["en"]]  # type: ignore[union-attr]


def test_a_pass_releases_just_the_claims_left_standing() -> None:
    release = report(DRAFT, {}, "en", _verdict("direct_evidence", "contradicted"))
    assert release.content_type == "DIAGNOSIS_REPORT"
    texts = [a.text for a in release.payload.report.analysis]  # type: ignore[union-attr]
    # The finding shown is the line the standing claim cites, as the tool wrote it.
    assert texts == ["cartservice ranks 1 of 10: call_latency 0.005 s -> 0.257 s"]


def test_a_conclusion_that_says_more_than_the_released_findings_is_not_released() -> None:
    """The model's summary is released as written when its words are mostly those of the released
    findings and their evidence; else the first finding, as the model wrote it, is the conclusion. The
    model's own advice is no action: what to do comes from the runbooks, as guidance."""
    grounded = ExecutorEvidence(
        diagnosis_summary="cartservice call latency rose from 0.005 s to 0.257 s: consumers slowed down.",
        claims=[_claim(1, "consumers slowed down")],
        user_facing_answer="",
        recommended_actions=[
            RecommendedAction(
                action_text="Deploy the payment-service service to improve its performance",
                reason="",
                evidence_bindings=[],
            ),
        ],
    )
    kept = report(grounded, {}, "en", None)
    assert kept.conclusion == grounded.diagnosis_summary
    assert kept.payload.report.action_plan == []  # type: ignore[union-attr]
    invented = grounded.model_copy(
        update={"diagnosis_summary": "High CPU usage due to increased traffic and network latency."}
    )
    assert report(invented, {}, "en", None).conclusion == "consumers slowed down"


def _ranking_ledger() -> dict[str, LedgerEntry]:
    ranking = [
        {"rank": 1, "service": "cartservice", "suspected_category": "network"},
        {"rank": 2, "service": "frontend", "suspected_category": "cpu"},
        {"rank": 3, "service": "redis-cart", "suspected_category": "not-a-category"},
        {"rank": 4, "service": "adservice", "suspected_category": "memory"},
    ]
    metrics = LedgerEntry("c2", "query_metrics", {"service": "frontend"}, ToolResult("success", {"series": []}), 1)
    ranked = LedgerEntry("c1", "rank_anomalies", {}, ToolResult("success", {"ranking": ranking}), 1)
    return {"c1": ranked, "c2": metrics}


def _cause(component: str, *claim_ids: str) -> RootCause:
    return RootCause(component=component, category="network", confidence="high", claim_ids=list(claim_ids))


def test_the_anomaly_ranking_leads_unless_the_model_has_evidence_it_lacks() -> None:
    """A small model names the ranking's second service on a claim that cites only the ranking: no
    evidence the ranking lacked, so the ranking's order leads, and the model's pick keeps its place in
    it with its own category and confidence; the others are indirect and low, resting on the claims
    that cite the ranking."""
    draft = DRAFT.model_copy(update={"root_causes": [_cause("frontend", "claim-1")]})
    causes = report(draft, _ranking_ledger(), "en").payload.root_causes  # type: ignore[union-attr]
    assert [(c.component, c.category, c.confidence, c.indirect, c.added_by) for c in causes] == [
        ("cartservice", "network", "low", True, "ranking"),
        ("frontend", "network", "high", False, ""),
        ("redis-cart", "unknown", "low", True, "ranking"),
    ]
    assert causes[0].claim_ids == ["claim-1"]  # both claims cite the ranking call's one line, shown once
    # With no pick of its own the model's report still names the ranking's suspects, in its order.
    alone = report(DRAFT, _ranking_ledger(), "en").payload.root_causes  # type: ignore[union-attr]
    assert [c.component for c in alone] == ["cartservice", "frontend", "redis-cart"]


def test_a_pick_resting_on_its_own_logs_leads_the_ranking() -> None:
    logs = LedgerEntry("c3", "query_logs", {"service": "frontend"}, ToolResult("success", {"templates": []}), 1)
    excerpt = "frontend: 412 lines of 'rpc error: code = Unavailable' in the window, none before"
    binding = _binding("log:frontend:template-7", "query_logs", "c3", excerpt)
    log_claim = DRAFT.claims[0].model_copy(update={"claim_id": "claim-3", "evidence_bindings": [binding]})
    draft = DRAFT.model_copy(
        update={"claims": [*DRAFT.claims, log_claim], "root_causes": [_cause("frontend", "claim-3")]}
    )
    causes = report(draft, {**_ranking_ledger(), "c3": logs}, "en").payload.root_causes  # type: ignore[union-attr]
    assert [(c.component, c.added_by) for c in causes] == [
        ("frontend", ""),
        ("cartservice", "ranking"),
        ("redis-cart", "ranking"),
    ]


def test_a_question_about_the_whole_system_gets_the_ranking_without_a_claim_citing_it() -> None:
    """An RCA replay asks about everything the telemetry holds: the ranking is the tools' analysis of
    exactly that, so its suspects are named even when no released claim cites it, resting on none."""
    binding = (
        DRAFT.claims[0]
        .evidence_bindings[0]
        .model_copy(
            update={"tool_name": "query_metrics", "source_invocation_ids": ["c2"], "source_id": "metric:frontend"}
        )
    )
    draft = DRAFT.model_copy(update={"claims": [DRAFT.claims[0].model_copy(update={"evidence_bindings": [binding]})]})
    whole = QuestionScope(services=None)
    causes = report(draft, _ranking_ledger(), "en", scope=whole).payload.root_causes  # type: ignore[union-attr]
    assert [(c.component, c.claim_ids) for c in causes] == [("cartservice", []), ("frontend", []), ("redis-cart", [])]
    assert report(draft, _ranking_ledger(), "en").payload.root_causes == []  # type: ignore[union-attr]


def test_the_ranking_adds_nothing_that_no_released_claim_cites() -> None:
    # The only claim left standing cites query_metrics, not the ranking.
    binding = (
        DRAFT.claims[0]
        .evidence_bindings[0]
        .model_copy(
            update={"tool_name": "query_metrics", "source_invocation_ids": ["c2"], "source_id": "metric:frontend"}
        )
    )
    claim = DRAFT.claims[0].model_copy(update={"evidence_bindings": [binding]})
    draft = DRAFT.model_copy(update={"claims": [claim], "root_causes": [_cause("frontend", "claim-1")]})
    causes = report(draft, _ranking_ledger(), "en").payload.root_causes  # type: ignore[union-attr]
    assert [c.component for c in causes] == ["frontend"]
    # The model's own three stand in its order: nothing it rests on cites the ranking.
    three = [_cause(s, "claim-1") for s in ("adservice", "emailservice", "frontend")]
    full = report(draft.model_copy(update={"root_causes": three}), _ranking_ledger(), "en")
    assert [c.component for c in full.payload.root_causes] == ["adservice", "emailservice", "frontend"]  # type: ignore[union-attr]


def _runbook_ledger() -> dict[str, LedgerEntry]:
    block = {
        "key": "kubepodnotready#chunk-0",
        "heading": "KubePodNotReady > Diagnosis",
        "text": "KubePodNotReady > Diagnosis\nState Running but not ready usually means the readiness probe fails. "
        "Check the probe's path and port against what the application serves.",
    }
    output = {"evidence": [block]}
    return {"c9": LedgerEntry("c9", "lookup_knowledge", {"query": "q"}, ToolResult("success", output), 1)}


def test_without_telemetry_the_answer_is_guidance_and_says_what_it_could_not_see() -> None:
    """A question about frontend pods the connected telemetry knows nothing of: no finding, no root cause,
    the best runbook's lines as guidance the system added (attributed, marked), a hypothesis that only
    restates the question dropped, and a conclusion saying plainly what could not be looked at."""
    from harness.contracts import Hypothesis
    from harness.question_scope import question_scope

    question = "After the rollout frontend pods never become Ready (KubePodNotReady). What did we break?"
    draft = ExecutorEvidence(
        diagnosis_summary="After the rollout frontend pods never become Ready.",
        claims=[],
        hypotheses=[
            Hypothesis(hypothesis_text="Frontend pods never become Ready after the rollout.", basis=""),
            Hypothesis(
                hypothesis_text="The readiness probe points at a path the new image no longer serves.", basis=""
            ),
        ],
        user_facing_answer="",
    )
    ledger = _runbook_ledger()
    release = report(draft, ledger, "en", None, question_scope(question, ledger), question)
    payload = release.payload.model_dump()
    assert release.content_type == "DIAGNOSIS_REPORT" and payload["root_causes"] == []
    analysis = payload["report"]["analysis"]
    assert [(a["kind"], a["added"], a["source"]) for a in analysis] == [
        ("guidance", True, "kubepodnotready#chunk-0"),
        ("guidance", True, "kubepodnotready#chunk-0"),
        ("hypothesis", False, None),
    ]
    assert analysis[0]["text"] == "State Running but not ready usually means the readiness probe fails."
    # The first sentence is something to check, labelled; what could not be looked at is a limitation.
    assert release.conclusion == (
        "Likely, not confirmed: The readiness probe points at a path the new image no longer serves."
    )
    assert payload["report"]["limitations"]["missing_info"][0].startswith("No metrics or logs for frontend")


def _summary_without_telemetry(summary: str) -> Release:
    """The model's summary alone, for a question about frontend pods no connected backend knows."""
    from harness.question_scope import question_scope

    question = "After the rollout frontend pods never become Ready (KubePodNotReady). What did we break?"
    draft = ExecutorEvidence(diagnosis_summary=summary, claims=[], user_facing_answer="")
    ledger = _runbook_ledger()
    return report(draft, ledger, "en", None, question_scope(question, ledger), question)


def test_a_summary_without_findings_follows_a_plain_sentence_labelled_as_unconfirmed() -> None:
    """No telemetry about the question: the model's summary is released as written, after the sentence of
    what could not be looked at and labelled, so "the probe fails" is never read first as a finding."""
    release = _summary_without_telemetry(
        "Frontend pods are not ready because their readiness probe checks a path the app changed."
    )
    assert release.conclusion == (
        "Likely, not confirmed: Frontend pods are not ready because their readiness probe checks a path the app "
        "changed."
    )
    missing = release.payload.report.limitations.missing_info  # type: ignore[union-attr]
    assert missing[0].startswith("No metrics or logs for frontend")


def _metrics_ledger() -> dict[str, LedgerEntry]:
    lines = [
        {
            "key": "logtpl:payment-service:2",
            "text": "payment-service log template 'Slow query <*>: UPDATE orders "
            "SET status=? WHERE id=? (lock wait)': 16 lines in the window, 0 in the baseline (new)",
        },
        {"key": "metric:order-service:http_server_requests", "text": "order-service p99 120 ms, unchanged"},
    ]
    logs = LedgerEntry("c5", "query_logs", {}, ToolResult("success", {"evidence": lines}), 1)
    return {"c5": logs, **_runbook_ledger()}


def test_measured_lines_stand_as_added_findings_when_the_model_drew_none() -> None:
    """The tools measured the asked service, the model wrote no finding: its lines are released verbatim as
    findings the system added (the answer never says the telemetry showed nothing), another service's are
    not, and no root cause rests on them."""
    draft = ExecutorEvidence(diagnosis_summary="", claims=[], user_facing_answer="")
    scope = QuestionScope(frozenset({"payment-service"}))
    release = report(draft, _metrics_ledger(), "en", None, scope, "Is the payment database down?")
    payload = release.payload.model_dump()
    first = payload["report"]["analysis"][0]
    assert (first["kind"], first["added"], first["evidence_keys"]) == ("finding", True, ["logtpl:payment-service:2"])
    assert first["text"].startswith("payment-service log template 'Slow query <*>: UPDATE orders")
    assert "order-service" not in str(payload["report"]["analysis"])
    # Nothing of the model's to lead with: a plain sentence, no runbook line promoted to the first one.
    assert release.conclusion == NOTHING_NAMES["en"]
    assert payload["report"]["limitations"]["missing_info"] == [NOT_DRAWN["en"]]
    assert payload["root_causes"] == []
    assert [r["source_type"] for r in payload["references"]][:1] == ["LOGS"]


def test_a_knowledge_pack_passage_is_referenced_with_its_page() -> None:
    """Guidance quoted from a pack's page carries the page's address in its reference, to read it whole;
    a block without one (a file of the user's own) carries none."""
    ledger = _runbook_ledger()
    page = "https://kubernetes.io/docs/tasks/debug/debug-application/debug-pods/"
    ledger["c9"].result.output["evidence"][0]["url"] = page
    draft = ExecutorEvidence(diagnosis_summary="", claims=[], user_facing_answer="")
    question = "After the rollout frontend pods never become Ready (KubePodNotReady). What did we break?"
    payload = report(draft, ledger, "en", None, QuestionScope(frozenset({"frontend"})), question).payload
    refs = payload.model_dump()["references"]
    assert [(r["source"], r["url"]) for r in refs] == [("kubepodnotready", page)]
    plain = report(draft, _runbook_ledger(), "en", None, QuestionScope(frozenset({"frontend"})), question)
    assert [r["url"] for r in plain.payload.model_dump()["references"]] == [None]


def _lookup_ledger(titles: list[str]) -> dict[str, LedgerEntry]:
    blocks = [
        {
            "key": f"{t.replace(' ', '-').lower()}#chunk-{n}",
            "title": t,
            "heading": f"{t} > Diagnosis",
            "text": f"{t} > Diagnosis\nThe probe usually fails because the port {n} is wrong in the template.",
        }
        for n, t in enumerate(titles)
    ]
    output = {"evidence": blocks}
    return {"c9": LedgerEntry("c9", "lookup_knowledge", {"query": "q"}, ToolResult("success", output), 1)}


def test_guidance_from_runbooks_that_agree_on_nothing_says_it_may_not_apply() -> None:
    """Every passage the question's lookup found is from a different runbook: the answer says the search
    agreed on no runbook, in its limitations (the conclusion says nothing names the cause); two passages
    of one runbook, however the corpora spell its title, are agreement."""
    from harness.stages.release import SCATTERED

    draft = ExecutorEvidence(diagnosis_summary="", claims=[], user_facing_answer="")
    scope = QuestionScope(frozenset({"cart"}))
    scattered = report(
        draft, _lookup_ledger(["Gandi domains", "Tutorial template", "etcd slow reads"]), "en", None, scope
    )
    payload = scattered.payload.model_dump()
    assert SCATTERED["en"] in payload["report"]["limitations"]["missing_info"]
    assert scattered.conclusion == NOTHING_NAMES["en"]
    agreed = report(
        draft, _lookup_ledger(["KubePodNotReady", "Kube Pod Not Ready", "etcd slow reads"]), "en", None, scope
    )
    assert SCATTERED["en"] not in str(agreed.payload.model_dump())


def test_a_runbook_sentence_is_never_released_as_a_finding() -> None:
    """The model wrote a runbook line as a finding citing a metric line: it is dropped (the line is guidance,
    released verbatim with its runbook), and its own reading of the metric stays a finding."""
    from harness.evidence_catalog import Span
    from harness.stages.answer import to_evidence

    metric = "payment-service hikaricp_connections_active 5 -> 20, 40x its baseline spread since 10:00"
    rule = "Compare the metric hikaricp_connections_active with hikaricp_connections_max to confirm exhaustion."
    spans = [
        Span("E1", "metric:payment-service:x", "query_metrics", "c1", metric),
        Span("E2", "pool#chunk-1", "lookup_knowledge", "c2", rule),
    ]
    data = {
        "findings": [
            {
                "text": "Compare hikaricp_connections_active with hikaricp_connections_max to confirm exhaustion",
                "evidence": ["E1"],
            },
            {"text": "payment-service hikaricp_connections_active rose from 5 to 20", "evidence": ["E1"]},
        ],
        "guidance": ["E2"],
        "hypotheses": [],
        "summary": "payment-service's pool is exhausted.",
    }
    evidence = to_evidence(data, spans, ["payment-service"])
    assert [(c.claim_type, c.claim_text) for c in evidence.claims] == [
        ("finding", "payment-service hikaricp_connections_active rose from 5 to 20"),
        ("guidance", rule),
    ]


def test_a_fallback_keeps_the_rankings_suspects_only_for_the_whole_system() -> None:
    """Nothing was supported: a replay question (about the whole system) still gets what the tools measured,
    the ranking's first three in its order, said as unconfirmed; a question about one service whose
    telemetry the ranking does not cover gets none of another service's."""
    from harness.stages.release import fallback

    whole = fallback("INSUFFICIENT_EVIDENCE", "en", [], None, [], [], _ranking_ledger(), None, QuestionScope(None))
    payload = whole.payload.model_dump()
    assert [(c["component"], c["added_by"], c["confidence"]) for c in payload["root_causes"]] == [
        ("cartservice", "ranking", "low"),
        ("frontend", "ranking", "low"),
        ("redis-cart", "ranking", "low"),
    ]
    assert payload["text"].endswith(
        "The anomaly ranking's first suspects (measured by the tools, not confirmed):\n"
        "- cartservice (network)\n- frontend (cpu)\n- redis-cart (unknown)"
    )
    one = QuestionScope(frozenset({"payment-service"}))
    narrow = fallback("INSUFFICIENT_EVIDENCE", "en", [], None, [], [], _ranking_ledger(), None, one)
    assert narrow.payload.model_dump()["root_causes"] == [] and "suspects" not in narrow.payload.model_dump()["text"]


def test_a_fallback_shows_what_the_tools_measured_about_the_asked_service_only() -> None:
    """The verifier confirmed nothing: the user still sees the measured lines about the asked service, tool
    output verbatim with its key, labelled as not analysed; another service's line is not shown."""
    from harness.stages.release import fallback

    lines = [
        {"key": "metric:payment-service:hikaricp_connections_pending", "text": "pending 0 -> 55 since 10:00"},
        {"key": "metric:order-service:http_server_requests", "text": "order-service p99 120 ms, unchanged"},
    ]
    metrics = LedgerEntry("c5", "query_metrics", {}, ToolResult("success", {"evidence": lines}), 1)
    scope = QuestionScope(frozenset({"payment-service"}))
    payload = fallback("LOW_CONFIDENCE", "en", [], None, [], [], {"c5": metrics}, None, scope).payload.model_dump()
    assert payload["measured"] == ["pending 0 -> 55 since 10:00 [metric:payment-service:hikaricp_connections_pending]"]
    assert "Measured by the tools (their output, not analysed):\n- pending 0 -> 55 since 10:00" in payload["text"]
    assert "order-service" not in payload["text"]


def test_a_summary_that_repeats_a_runbook_line_is_labelled_as_the_models_reading_of_it() -> None:
    """The model's words over a runbook's: they can say the reverse of it, so they are never "runbook X
    says"; the runbook's own sentence stands beside them, quoted."""
    release = _summary_without_telemetry("The readiness probe fails usually means state Running but not ready.")
    assert release.conclusion == (
        "The model's reading of runbook kubepodnotready (not confirmed): The readiness probe fails "
        "usually means state Running but not ready."
    )
    quoted = [a["text"] for a in release.payload.model_dump()["report"]["analysis"]]
    assert "State Running but not ready usually means the readiness probe fails." in quoted


def test_findings_about_a_ranked_service_bring_its_ranking_even_uncited() -> None:
    """The 0.5B cited the demo's log template and p99 of payment-service, not the ranking line: the report
    said "Root cause: none named" beside them. The ranking's reading of that service now joins, resting on
    those findings; a ranked service no finding is about, or one the ranking found quiet, does not."""
    ranking = [
        {"rank": 1, "service": "payment-service", "anomalous": True, "suspected_category": "dependency"},
        {"rank": 2, "service": "order-service", "anomalous": False, "suspected_category": "unknown"},
    ]
    ledger = {
        "c1": LedgerEntry("c1", "rank_anomalies", {}, ToolResult("success", {"ranking": ranking}), 1),
        "c3": LedgerEntry("c3", "query_logs", {"service": "payment-service"}, ToolResult("success", {}), 1),
        "c4": LedgerEntry("c4", "query_metrics", {"service": "order-service"}, ToolResult("success", {}), 1),
    }
    excerpt = "payment-service log template 'Slow query <*>: UPDATE orders (lock wait)': 16 lines, 0 before"
    claim = DRAFT.claims[0].model_copy(
        update={
            "claim_text": excerpt,
            "evidence_bindings": [_binding("logtpl:payment-service:2", "query_logs", "c3", excerpt)],
        }
    )
    quiet = "order-service http_server_requests_p99_ms 90 -> 120, 1x its baseline spread"
    calm = claim.model_copy(
        update={
            "claim_id": "claim-2",
            "claim_text": quiet,
            "evidence_bindings": [_binding("metric:order-service:p99", "query_metrics", "c4", quiet)],
        }
    )
    draft = DRAFT.model_copy(update={"claims": [claim, calm]})
    scope = QuestionScope(frozenset({"payment-service", "order-service"}))
    causes = report(draft, ledger, "en", None, scope).payload.root_causes  # type: ignore[union-attr]
    assert [(c.component, c.category, c.added_by, c.claim_ids) for c in causes] == [
        ("payment-service", "dependency", "ranking", ["claim-1"])
    ]


def test_a_looping_hypothesis_or_summary_is_dropped_whole() -> None:
    """A decoding loop is released neither as a hypothesis nor as the conclusion's unconfirmed cause, and
    never cut to its first round (that would be the system's rewrite): the next hypothesis stands."""
    from harness.contracts import Hypothesis
    from harness.question_scope import question_scope

    question = "After the rollout frontend pods never become Ready (KubePodNotReady). What did we break?"
    loop = "the probe fails because the probe fails because " * 4
    draft = ExecutorEvidence(
        diagnosis_summary=loop,
        claims=[],
        hypotheses=[
            Hypothesis(hypothesis_text=loop, basis=""),
            Hypothesis(
                hypothesis_text="The readiness probe points at a path the new image no longer serves.", basis=""
            ),
        ],
        user_facing_answer="",
    )
    ledger = _runbook_ledger()
    release = report(draft, ledger, "en", None, question_scope(question, ledger), question)
    analysis = release.payload.model_dump()["report"]["analysis"]
    assert [a["text"] for a in analysis if a["kind"] == "hypothesis"] == [
        "The readiness probe points at a path the new image no longer serves."
    ]
    assert release.conclusion == (
        "Likely, not confirmed: The readiness probe points at a path the new image no longer serves."
    )


def test_an_unfinished_statement_of_the_model_is_dropped_not_cut() -> None:
    """A hypothesis that stops on a comma ("… refusing all new write commands,") and a summary whose last
    sentence has no end after others that have theirs are released without the unfinished part."""
    from harness.contracts import Hypothesis
    from harness.stages.answer import whole_sentences

    draft = ExecutorEvidence(
        diagnosis_summary="",
        claims=[],
        hypotheses=[
            Hypothesis(hypothesis_text="The primary is currently refusing all new write commands,", basis=""),
            Hypothesis(hypothesis_text="Transaction ID wraparound protection stopped writes.", basis=""),
        ],
        user_facing_answer="",
    )
    release = report(draft, _runbook_ledger(), "en", None, QuestionScope(frozenset({"frontend"})), "why?")
    hypotheses = [a.text for a in release.payload.report.analysis if a.kind == "hypothesis"]  # type: ignore[union-attr]
    assert hypotheses == ["Transaction ID wraparound protection stopped writes."]
    assert release.conclusion == "Likely, not confirmed: Transaction ID wraparound protection stopped writes."
    assert whole_sentences("Pods wait to be scheduled. This phase occurs due to an error with thenode") == (
        "Pods wait to be scheduled."
    )
    assert whole_sentences("Redis memory is full") == "Redis memory is full"
    cut = "Pods are evicted. The node is under pressure, which makes the `memory. available` signal fall below"
    assert whole_sentences(cut) == "Pods are evicted."


def test_numbers_zones_and_capped_findings_survive() -> None:
    """A decimal point ends no sentence, a zone named A is a finished statement, and a root cause keeps
    resting on its finding's line when an earlier finding cited many lines (the cap takes only further
    lines); a finding that cited runbooks only leaves no id behind."""
    from harness.contracts import RootCause
    from harness.stages.answer import whole_sentences
    from harness.stages.release import MAX_FINDING_LINES, as_measured
    from harness.stages.support_check import complete_statement

    assert whole_sentences("payment-service p99 latency rose to 1.2 s after the deploy") == (
        "payment-service p99 latency rose to 1.2 s after the deploy"
    )
    assert complete_statement("Traffic failed over to zone A") and not complete_statement("It is caused by the")
    many = Claim(
        claim_id="claim-1",
        claim_type="finding",
        claim_text="many lines",
        support_level="direct",
        evidence_bindings=[_binding(f"logtpl:svc:{n}", "query_logs", "c5", f"line {n}") for n in range(6)],
    )
    other = many.model_copy(
        update={"claim_id": "claim-2", "evidence_bindings": [_binding("logtpl:db:1", "query_logs", "c5", "db line")]}
    )
    runbook = many.model_copy(
        update={"claim_id": "claim-3", "evidence_bindings": [_binding("doc#chunk-0", "lookup_knowledge", "c9", "x")]}
    )
    cause = RootCause(component="db", category="dependency", confidence="high", claim_ids=["claim-2", "claim-3"])
    shown, causes = as_measured([many, other, runbook], [cause])
    assert len([c for c in shown if c.claim_id.startswith("claim-1")]) == MAX_FINDING_LINES
    assert causes[0].claim_ids == ["claim-2"] and "db line" in [c.claim_text for c in shown]
