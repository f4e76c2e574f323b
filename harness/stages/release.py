"""Release: the verdict decides what the user sees (DESIGN.md §2, seed 000 §8, seed e2e §7).

Only verified content leaves. A DIAGNOSIS_REPORT is built from the claims that passed the evidence
guard and that the verifier did not find unsupported, with references to the tool outputs they cite
and ``root_causes`` resting on those claims only. A SAFE_FALLBACK lists as confirmed only what was
verified (never a claim the guard rejected), and its gaps are sentences for the user, not the
guard's internals. Text that repeats the service's own prompts is removed before release: list items
are dropped, a conclusion or answer becomes a plain sentence saying why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.contracts import (
    ROOT_CAUSE_CATEGORIES,
    AnalysisItem,
    Claim,
    Conclusion,
    DiagnosisReportPayload,
    ExecutorEvidence,
    FallbackType,
    Hypothesis,
    Limitations,
    Reference,
    Report,
    RootCause,
    SafeFallbackPayload,
    VerifierOutput,
)
from harness.evidence_catalog import Span, build_catalog, telling
from harness.instruction_guard import quotes_instructions
from harness.playbook import about_the_question
from harness.question_scope import QuestionScope, limitation, service_of_key
from harness.stages.analyzed import (
    analyzed_causes,
    answering_finding,
    composed_conclusion,
    decisive_claim,
    is_cluster_fact,
    names_cause,
    rests_on_trouble,
    states_answer,
)
from harness.stages.answer import guidance
from harness.stages.support_check import ECHO, complete_statement, content_overlap, echoes, loops
from harness.stages.verifier import evidence_gaps
from harness.tools.base import EVIDENCE_TOOLS, LedgerEntry
from harness.tools.kubernetes import KUBERNETES_TOOL_NAMES
from rag.chunking import slug

SOURCE_TYPES = {
    "lookup_knowledge": "RAG",
    "query_logs": "LOGS",
    "query_metrics": "METRICS",
    "rank_anomalies": "METRICS",
    "service_dependencies": "TOOL",
    "read_skill": "SKILL",
    **{name: "K8S" for name in KUBERNETES_TOOL_NAMES},
}
MAX_ROOT_CAUSES = 5
ADDED_GUIDANCE = 2
RANKED_CANDIDATES = 3  # the anomaly ranking fills the candidates up to this many (the answer's own cap)

TEMPLATES = {
    ("LOW_CONFIDENCE", "zh"): (
        "已获取的证据未能确认原因；以下是已有的信息和缺口，请谨慎参考。",
        "已确认信息：",
        "当前缺口：",
        "建议下一步：",
    ),
    ("LOW_CONFIDENCE", "en"): (
        "The evidence gathered confirms no cause; below is what it shows and what is missing, use it with care.",
        "Confirmed:",
        "Current gaps:",
        "Suggested next steps:",
    ),
    ("INSUFFICIENT_EVIDENCE", "zh"): (
        "当前无法基于已获取证据生成可靠结论。",
        "已确认信息：",
        "证据缺口：",
        "建议下一步：",
    ),
    ("INSUFFICIENT_EVIDENCE", "en"): (
        "A reliable conclusion cannot be drawn from the evidence gathered.",
        "Confirmed:",
        "Evidence gaps:",
        "Suggested next steps:",
    ),
    ("TOOL_ERROR", "zh"): (
        "证据工具调用失败，本次未能获取任何证据；这不是对故障本身的结论，请在工具恢复后重试。",
        "已确认信息：",
        "失败的工具：",
        "建议下一步：",
    ),
    ("TOOL_ERROR", "en"): (
        "The evidence tools failed, so no evidence was gathered; this says nothing about the incident "
        "itself: ask again once they answer.",
        "Confirmed:",
        "Tools that failed:",
        "Suggested next steps:",
    ),
    ("MODEL_TIMEOUT", "zh"): (
        "模型未能在时限内写完回答；以下是工具已测得的信息和运维手册建议的检查，均未经模型分析。",
        "已确认信息：",
        "缺口：",
        "建议下一步：",
    ),
    ("MODEL_TIMEOUT", "en"): (
        "The model did not finish its answer in time; below is what the tools measured and what the "
        "runbooks say to check, none of it analysed by the model.",
        "Confirmed:",
        "Gaps:",
        "Suggested next steps:",
    ),
}
NONE = {"zh": "（无）", "en": "(none)"}
MEASURED_LINES = 3
MEASURED = {
    "zh": "工具测得（原样输出，未经分析）：",
    "en": "Measured by the tools (their output, not analysed):",
}
SUSPECTS = {
    "zh": "异常排序的前几位（工具测得，未经证实）：",
    "en": "The anomaly ranking's first suspects (measured by the tools, not confirmed):",
}
ANALYZED = {
    "zh": "分析器发现的其他原因（工具测得，未经模型确认）：",
    "en": "What else the analyzers found (measured by the tools, not confirmed by the model):",
}
BY_ANALYSIS = {
    "zh": "（由工具的分析得出，未经模型确认。）",
    "en": "(Found by the tools' analysis, not confirmed by the model.)",
}
LOOPED = {
    "en": "The model's draft repeated itself in a loop and was dropped; nothing else it wrote was supported.",
    "zh": "模型的草稿陷入了重复循环，已被丢弃；它写的其他内容都没有证据支持。",
}
REMOVED = {
    "en": "Part of this answer was removed because it repeated raydiag's internal instructions; "
    "the verified findings are listed with their evidence.",
    "zh": "此回答的部分内容因复述了 raydiag 的内部指令而被移除；已核验的发现及其证据见下文。",
}
UNSUPPORTED = {
    "en": "The verification found none of the drafted findings supported by the evidence they cite.",
    "zh": "核验未发现任何一条草拟的发现能被其引用的证据支持。",
}
RESTATED = {
    "en": "The model's draft only restated the question, so no finding of its own was confirmed; the lines "
    "measured by the tools are their output, not analysed.",
    "zh": "模型的草稿只是复述了问题，没有能被确认的发现；工具测得的内容是原始输出，未经分析。",
}
UNVERIFIED = {
    "en": "{n} finding(s) cited evidence that could not be verified in this run's tool outputs and were withheld.",
    "zh": "有 {n} 条发现引用的证据无法在本次工具输出中核实，已被拦截。",
}
NO_FINDING = {
    "en": "The telemetry shows no finding about this question.",
    "zh": "遥测数据中没有与该问题相关的发现。",
}
NOT_DRAWN = {
    "en": "The model drew no finding from what the tools measured about the asked components; their lines are "
    "below as measured, not analysed.",
    "zh": "模型没有从工具对所问组件的测量中得出发现；工具测得的原始数据列在下面，未经分析。",
}
LIKELY = {"en": "Likely, not confirmed: ", "zh": "可能的原因（未经证实）："}
# No statement of the model's to lead with: say so plainly, and never promote a runbook line to the first
# sentence (the search's first line was another system's or another symptom's as often as not: a Postgres
# hot-standby note for a wraparound stop, a GitLab status-tweet template for an outage without a deploy).
NOTHING_NAMES = {
    "en": "No tool finding names the cause; the runbook passages below are what the knowledge search found, "
    "for you to judge whether they apply.",
    "zh": "工具没有找到可定位原因的证据；下面是知识库检索到的运维手册段落，是否适用请自行判断。",
}
SCATTERED = {
    "en": "The knowledge search agreed on no runbook: each passage below comes from a different one, so some of "
    "this guidance may not apply to the question.",
    "zh": "知识库检索没有集中到某一本手册：下面每一段都来自不同的手册，其中部分指导可能并不适用于此问题。",
}
NO_ANSWER = {
    "en": "The diagnosis step gave no usable answer ({status}).",
    "zh": "诊断步骤没有给出可用的回答（{status}）。",
}


@dataclass
class Release:
    content_type: str
    payload: DiagnosisReportPayload | SafeFallbackPayload
    outcome: str  # SUCCESS | FALLBACK
    answer: str
    conclusion: str


def _page(entry: LedgerEntry, key: str) -> str | None:
    """The public page of the knowledge-base block ``key`` in a lookup's result, where its pack gives one."""
    if entry.tool_name != "lookup_knowledge":
        return None
    blocks = entry.result.output.get("evidence") or []
    return next((str(b["url"]) for b in blocks if isinstance(b, dict) and b.get("key") == key and b.get("url")), None)


def _references(claims: list[Claim], ledger: dict[str, LedgerEntry]) -> list[Reference]:
    refs: dict[tuple[str, str], Reference] = {}
    for claim in claims:
        for b in claim.evidence_bindings:
            for cid in [str(i) for i in b.source_invocation_ids] or [b.source_id]:
                entry = ledger.get(cid)
                if entry is None or (cid, b.source_id) in refs:
                    continue
                scope = ", ".join(f"{k}={v}" for k, v in entry.args.items() if isinstance(v, str | int | float))
                refs[(cid, b.source_id)] = Reference(
                    source_type=SOURCE_TYPES.get(entry.tool_name, "TOOL"),
                    source=b.source_id.split("#")[0]
                    if "#" in b.source_id
                    else b.source_id or f"{entry.tool_name}:{cid}",
                    scope=scope[:200],
                    tool_call_id=cid,
                    excerpt=b.evidence_excerpt[:300],
                    url=_page(entry, b.source_id),
                )
    return list(refs.values())


def withheld(text: str) -> bool:
    """Model text that is not released: it repeats the service's own prompts, or it is a decoding loop
    (``loops``: dropped as a whole, never cut to its first round, which would be a system rewrite)."""
    return quotes_instructions(text) or loops(text)


# The draft where the model gave none the guard could keep: an analyzer's fact still answers.
NO_DRAFT = ExecutorEvidence(diagnosis_summary="", claims=[], user_facing_answer="")


def decided_by_evidence(ledger: dict[str, LedgerEntry], scope: QuestionScope | None, question: str) -> bool:
    """An analyzer found a candidate cause or the answer itself (``harness/stages/analyzed.py``): the report
    stands on that fact, whatever became of the model's draft."""
    return decisive_claim(ledger, scope, question) is not None


def supported_claims(evidence: ExecutorEvidence, verdict: VerifierOutput | None) -> list[Claim]:
    """The guard's kept claims minus those the verifier found unsupported or contradicted. None left
    means no report, whatever the verdict says (a PASS whose every fact is unsupported, a small verifier
    model's or the model's PASS beside the rules' failures, must not release those claims), unless an
    analyzer's fact decides the answer: the report then stands on that fact alone."""
    if verdict is None:
        return list(evidence.claims)
    bad = {f.fact for f in verdict.facts_checked if f.verification in ("no_evidence", "contradicted")}
    return [c for c in evidence.claims if c.claim_text not in bad]


def root_causes(
    evidence: ExecutorEvidence,
    claims: list[Claim],
    ledger: dict[str, LedgerEntry],
    scope: QuestionScope | None = None,
    question: str = "",
) -> list[RootCause]:
    """The model's candidates that rest on released findings, and the anomaly ranking's services in its
    order, only services the question is about. The ranking counts when a released finding cites it or is
    about one of its services, or when the question is about the whole system (an RCA replay): it is the
    tools' analysis of exactly that. Its services are marked ``added_by: ranking``, low confidence, resting
    on the findings that cite the ranking or are about the service (none when none does). The model's
    first pick leads only when it is the ranking's first or rests on evidence the ranking lacks (a log
    finding about it); otherwise the ranking's order leads, with the model's cause text kept where it
    named the same service (measured before this rule: where the model's first pick departed from the
    ranking's it was right 0 of 4 times, the ranking 3: the run at 07b787e, benchmarks/results/history.jsonl)."""
    by_id = {c.claim_id: c for c in claims if c.claim_type != "guidance"}
    model: list[RootCause] = []
    for cause in evidence.root_causes:
        ids = [i for i in cause.claim_ids if i in by_id]
        if not ids or any(c.component == cause.component for c in model):
            continue
        if scope is not None and not scope.covers(cause.component):
            continue
        model.append(cause.model_copy(update={"claim_ids": ids}))
    analyzed = analyzed_causes(ledger, claims, scope, question)
    # A component the analyzers looked at is a root cause only on a finding of trouble there.
    model = [c for c in model if rests_on_trouble(c, claims, ledger)]
    ranked = _ranked(claims, ledger, scope)
    if analyzed:
        # The analyzers' fact decides: the model's cause for the same component gives way to it, and the
        # anomaly ranking's other suspects follow (a telemetry cause is the ranking's first, read).
        out = analyzed + [c for c in model if not any(a.component == c.component for a in analyzed)]
        out += [r for r in ranked if not any(c.component == r.component for c in out)]
        return out[:MAX_ROOT_CAUSES]
    if not ranked:
        return model[:MAX_ROOT_CAUSES]
    if model and (model[0].component == ranked[0].component or _rests_on_logs(model[0], claims, ledger)):
        lead, rest = model[:1], model[1:]
    else:
        lead, rest = [], model
    mine = {c.component: c for c in rest}
    out = lead + [mine.pop(r.component, r) for r in ranked if not any(c.component == r.component for c in lead)]
    return (out + list(mine.values()))[:MAX_ROOT_CAUSES]


def _ranked(claims: list[Claim], ledger: dict[str, LedgerEntry], scope: QuestionScope | None) -> list[RootCause]:
    """The anomaly ranking's first ``RANKED_CANDIDATES`` services in scope, as added root causes. Where no
    released finding cites the ranking, its services that released findings are about (a log template or a
    metric of that service) still count, each resting on those findings: the ranking's category is the
    tools' reading of exactly the signals the findings show."""
    citing = _citing(claims, ledger, "rank_anomalies")
    whole = scope is not None and scope.services is None
    last = [k for k, e in ledger.items() if e.tool_name == "rank_anomalies" and e.result.status == "success"][-1:]
    calls = list(citing) or last
    out: list[RootCause] = []
    for call_id in calls:
        for entry in ledger[call_id].result.output.get("ranking") or []:
            service, category = str(entry.get("service") or ""), entry.get("suspected_category")
            if not service or (scope is not None and not scope.covers(service)):
                continue
            # Uncited, only a service the ranking found anomalous: a finding about a quiet neighbour
            # ("order-service p99 90 ms, as before") makes it no suspect.
            ids = citing.get(call_id) or (_about(claims, service) if entry.get("anomalous") else [])
            if not (citing or whole or ids):
                continue
            if len(out) < RANKED_CANDIDATES and not any(c.component == service for c in out):
                out.append(
                    RootCause(
                        component=service,
                        category=category if category in ROOT_CAUSE_CATEGORIES else "unknown",
                        confidence="low",
                        claim_ids=ids,
                        indirect=True,
                        added_by="ranking",
                    )
                )
    return out


def _about(claims: list[Claim], service: str) -> list[str]:
    """The released findings whose evidence is telemetry of ``service``."""
    return [
        c.claim_id
        for c in claims
        if c.claim_type != "guidance" and any(service_of_key(b.source_id) == service for b in c.evidence_bindings)
    ]


def _rests_on_logs(cause: RootCause, claims: list[Claim], ledger: dict[str, LedgerEntry]) -> bool:
    """A finding under the cause cites the logs of its component: evidence the metric ranking lacks."""
    for claim in claims:
        if claim.claim_id not in cause.claim_ids:
            continue
        for b in claim.evidence_bindings:
            entries = [ledger.get(str(i)) for i in b.source_invocation_ids]
            if any(e is not None and e.tool_name == "query_logs" for e in entries) and cause.component in b.source_id:
                return True
    return False


def _citing(claims: list[Claim], ledger: dict[str, LedgerEntry], tool: str) -> dict[str, list[str]]:
    """The calls of ``tool`` that released claims cite -> those claims' ids, in citation order."""
    found: dict[str, list[str]] = {}
    for claim in claims:
        for b in claim.evidence_bindings:
            for cid in map(str, b.source_invocation_ids):
                entry = ledger.get(cid)
                if entry is not None and entry.tool_name == tool and claim.claim_id not in found.get(cid, []):
                    found.setdefault(cid, []).append(claim.claim_id)
    return found


MAX_FINDING_LINES = 5


def as_measured(claims: list[Claim], causes: list[RootCause]) -> tuple[list[Claim], list[RootCause]]:
    """Findings as the tools' own lines: a model's finding becomes the measured lines it cites, each
    once, verbatim (its sentence is the model's reading, told in the conclusion, never shown as what was
    found); guidance and the lines the system added stay as they are. Root causes that rested on a model's
    finding rest on its lines."""
    out: list[Claim] = []
    renamed: dict[str, list[str]] = {}
    seen: set[str] = set()
    for claim in claims:
        if claim.claim_type == "guidance" or claim.support_level == "added":
            out.append(claim)
            seen.add(claim.claim_text)
            continue
        measured = [b for b in claim.evidence_bindings if b.tool_name != "lookup_knowledge"]
        for n, b in enumerate(measured, 1):  # a runbook's sentence is guidance, never a finding
            if b.evidence_excerpt in seen:
                same = next(c.claim_id for c in out if c.claim_text == b.evidence_excerpt)
                renamed.setdefault(claim.claim_id, []).append(same)
                continue
            if n > 1 and sum(c.claim_type != "guidance" for c in out) >= MAX_FINDING_LINES:
                break  # the cap takes a finding's further lines, never its first
            seen.add(b.evidence_excerpt)
            line = Claim(
                claim_id=claim.claim_id if n == 1 else f"{claim.claim_id}-{n}",
                claim_type=claim.claim_type,
                claim_text=b.evidence_excerpt,
                support_level=claim.support_level,
                evidence_bindings=[b],
            )
            out.append(line)
            renamed.setdefault(claim.claim_id, []).append(line.claim_id)
    # A root cause rests on what is shown: a finding with no measured line (it cited runbooks only) is gone.
    shown = {c.claim_id for c in out}
    causes = [
        c.model_copy(
            update={"claim_ids": list(dict.fromkeys(i for j in c.claim_ids for i in renamed.get(j, [j]) if i in shown))}
        )
        for c in causes
    ]
    return out, causes


def _analysis(claims: list[Claim], causes: list[RootCause], hypotheses: list[Hypothesis]) -> list[AnalysisItem]:
    """Findings, then guidance, then hypotheses, each labelled with its kind."""
    resting = {i for c in causes for i in c.claim_ids}
    items: list[AnalysisItem] = []
    for c in sorted(claims, key=lambda c: c.claim_type == "guidance"):
        keys = sorted({b.source_id for b in c.evidence_bindings})
        guidance = c.claim_type == "guidance"
        items.append(
            AnalysisItem(
                id=f"A-{len(items) + 1:03d}",
                text=c.claim_text,
                status="CRITICAL" if c.claim_id in resting or c.claim_type == "root_cause" else "NORMAL",
                evidence_keys=keys,
                kind="guidance" if guidance else "finding",
                source=keys[0] if guidance and keys else None,
                added=c.support_level == "added",
            )
        )
    for h in hypotheses:
        items.append(
            AnalysisItem(
                id=f"A-{len(items) + 1:03d}",
                text=h.hypothesis_text,
                kind="hypothesis",
                needs="; ".join(n for n in h.needed_evidence if n) or None,
            )
        )
    return items


def _topic(title: str) -> str:
    """A runbook's subject from its title, however a corpus spells it ("Kube Pod Not Ready", "KubePodNotReady"):
    its document-id slug without the hyphens."""
    return slug(title).replace("-", "")


def scattered_guidance(ledger: dict[str, LedgerEntry], lang: str) -> str | None:
    """A sentence for the user when the question's own lookup agreed on no runbook: every passage it
    returned is from a different runbook. On the tuning half of the correctness set those were the answers
    quoting a Gandi domain panel, a tutorial template or etcd's read latency for questions none of them is
    about; where the knowledge base has a runbook on the subject, two or more passages usually share it.
    Usually, not always (one passage of the right runbook can stand among strangers), so the sentence says
    what the search did, not that no runbook is about the question."""
    found = False
    for entry in about_the_question(ledger, has_telemetry=False).values():
        if entry.tool_name != "lookup_knowledge" or entry.result.status != "success":
            continue
        blocks = [b for b in entry.result.output.get("evidence") or [] if isinstance(b, dict)]
        topics = [_topic(str(b.get("title") or str(b.get("key", "")).split("#")[0])) for b in blocks]
        if len(topics) < 2 or len(set(topics)) < len(topics):
            return None  # one lookup that agreed on a runbook (or found one passage) is enough
        found = True
    return SCATTERED[lang] if found else None


def _added_guidance(ledger: dict[str, LedgerEntry], picked: list[Claim] | None = None) -> list[Claim]:
    """The two lines that say most about causes (``telling``) of the runbook that the lookup of the
    question itself ranked first (never its symptom or impact section; the playbook's lookup for a
    fault category is about a suspect, not the question), as guidance the system added, unless the model
    released them already: a small model's picks were often a lower-ranked runbook's lines, or the best
    runbook's mitigation links, and the user should still get what the best match says about causes."""
    own = about_the_question(ledger, has_telemetry=False) or ledger
    spans = [s for s in build_catalog(own, 40) if s.tool_name == "lookup_knowledge" and not s.describes_symptoms]
    if not spans:
        return []
    top = spans[0].key.split("#")[0]
    chosen = {c.claim_text for c in picked or [] if c.claim_type == "guidance"}
    spans = [s for s in spans if s.key.split("#")[0] == top]
    spans.sort(key=lambda s: -telling(s.text))  # stable: the search's order among equals
    # Once each: two copies of a runbook (its upstream and a fork) repeat a sentence.
    unique: dict[str, Span] = {}
    for s in spans:
        unique.setdefault(s.text, s)
    best = list(unique.values())[:ADDED_GUIDANCE]
    return [guidance(s, f"guide-{k}", added=True) for k, s in enumerate(best, 1) if s.text not in chosen]


def report(
    evidence: ExecutorEvidence,
    ledger: dict[str, LedgerEntry],
    lang: str,
    verdict: VerifierOutput | None = None,
    scope: QuestionScope | None = None,
    question: str = "",
    telemetry_source: str = "",
) -> Release:
    """``telemetry_source``: where the telemetry came from, said in ``limitations.scope``."""
    supported = supported_claims(evidence, verdict)
    claims = [c for c in supported if not quotes_instructions(c.claim_text)]
    looped = [c for c in claims if loops(c.claim_text)]
    claims = [c for c in claims if c not in looped]
    # A hypothesis that restates the question is no hypothesis (the 0.5B writes the symptom back).
    hypotheses = [
        h for h in evidence.hypotheses if not withheld(h.hypothesis_text) and not echoes(h.hypothesis_text, question)
    ]
    # A statement the model did not finish ("… refusing all new write commands,") is dropped, not released.
    hypotheses = list({h.hypothesis_text: h for h in hypotheses if complete_statement(h.hypothesis_text)}.values())
    unseen = limitation(scope, lang) if scope is not None else None
    if unseen:  # the evidence list's own sentence about missing telemetry, copied back, is no hypothesis
        hypotheses = [h for h in hypotheses if content_overlap(h.hypothesis_text, unseen) < ECHO]
    if not is_cluster_fact(decisive_claim(ledger, scope, question)):
        # Where the cluster's fact decides the answer, the system adds no runbook's lines beside it: the
        # first runbook of the question's lookup was another failure's as often as not (an image pull
        # answered beside a connection pool's "look for slow queries"). A telemetry cause keeps them: the
        # lookup ran on the same service's symptom.
        claims += _added_guidance(ledger, claims)
    decisive = decisive_claim(ledger, scope, question)
    if not claims and decisive is None:
        # Say why: the instruction guard withheld what was supported, the model looped, or nothing was
        # supported at all.
        if looped and len(looped) == len(supported):
            gap = LOOPED[lang]
        else:
            gap = REMOVED[lang] if supported else UNSUPPORTED[lang]
        return fallback("INSUFFICIENT_EVIDENCE", lang, [], verdict, [gap], [], ledger, None, scope)
    findings = [c for c in claims if c.claim_type != "guidance"]
    dropped = len(findings) < len([c for c in evidence.claims if c.claim_type != "guidance"])
    if decisive is not None and not any(c.claim_text == decisive.claim_text for c in findings):
        # The analyzers' fact comes first, as the tool's line, whatever the model wrote beside it (a model
        # finding that cites the line without stating it, "the pod is Running and healthy" beside a name
        # that does not resolve, does not stand for it).
        claims, findings = [decisive, *claims], [decisive, *findings]
    causes = root_causes(evidence, claims, ledger, scope, question)
    # The model drew no finding, yet the tools measured the asked components: their lines are shown as
    # measured (tool output, marked added), never "the telemetry shows nothing" (a Chinese question about
    # the demo's payment-service was told so beside a new 'Slow query … (lock wait)' log template).
    measured = [] if findings else measured_claims(ledger, scope)
    scattered = scattered_guidance(ledger, lang) if any(c.claim_type == "guidance" for c in claims) else None
    claims = measured + claims
    said = _said(claims) + " " + " ".join(h.hypothesis_text for h in hypotheses)
    summary = evidence.diagnosis_summary.strip()
    # Without findings the summary claims nothing measured: it may use the question's words beside what
    # the runbooks and hypotheses say, but one that only restates the question answers nothing. With
    # findings it rests on them and their evidence only.
    basis = said if findings else f"{said} {question}"
    usable = not (
        dropped
        or not summary
        or withheld(summary)
        or not _rests_on(summary, basis)
        or (not findings and echoes(summary, question))
    )
    if findings and not usable:
        # The model's summary is released as written or not at all: one that rested on a dropped finding
        # or says more than what was released gives way to the first finding, as the model wrote it.
        summary = findings[0].claim_text
    notes: list[str] = []
    if not findings:
        # Nothing the model found: the first sentence is the model's summary (or its first hypothesis) as
        # written and labelled unconfirmed or as the runbook it repeats, else a plain "nothing names the
        # cause"; what was not found goes to the limitations. A small model wrote
        # "The root cause is …" over an unrelated runbook's sentence: it is labelled, never read as found.
        likely = summary if usable and complete_statement(summary) else ""
        likely = likely or next((h.hypothesis_text for h in hypotheses), "")
        # (With no finding, the claims are guidance: an empty draft without an analyzer's fact fell back above.)
        summary = _unconfirmed(likely, claims, lang) if likely else NOTHING_NAMES[lang]
        notes = [NOT_DRAWN[lang] if measured else NO_FINDING[lang]]
        notes = [n for n in notes if n != summary]
    written_by = "model"
    lead = causes[0] if causes and causes[0].added_by == "analyzer" else None
    answer = answering_finding(ledger, scope, question) if lead is None else None
    # The model's summary was unusable and the deciding tool line stood in for it: a line of measurements or
    # of kubectl output is no sentence (the ranking's line names CPU and its spread, so it "named" the cause).
    tool_line = decisive is not None and summary == decisive.claim_text
    if lead is not None and (tool_line or not names_cause(summary, lead)):
        summary, written_by = composed_conclusion(lead, lang), "template"
    elif answer is not None and (tool_line or not states_answer(summary, answer)):
        summary, written_by = answer if re.search(r"[.!?。！？]$", answer) else f"{answer}.", "template"
    elif tool_line:
        written_by = "template"
    used = sorted({e.tool_name for e in ledger.values() if e.result.status == "success"})
    scope_text = ("证据来源：" if lang == "zh" else "Evidence from: ") + (", ".join(used) or NONE[lang])
    if telemetry_source:
        scope_text += ("；遥测数据：" if lang == "zh" else "; telemetry: ") + telemetry_source
    missing = [m for m in evidence.missing_info if not withheld(m)]
    shown, causes = as_measured(claims, causes)
    analysis = _analysis(shown, causes, hypotheses)
    payload = DiagnosisReportPayload(
        report=Report(
            conclusion=Conclusion(text=summary, based_on_analysis_ids=[a.id for a in analysis], written_by=written_by),
            analysis=analysis,
            action_plan=[],
            recommendations=[],
            limitations=Limitations(
                scope=scope_text,
                missing_info=list(dict.fromkeys(m for m in (unseen, *notes, scattered, *missing) if m)),
            ),
        ),
        references=_references(shown, ledger),
        root_causes=causes,
    )
    return Release("DIAGNOSIS_REPORT", payload, "SUCCESS", summary, summary)


# The share of a conclusion's or action's content words that must occur in the released claims or
# their cited evidence for it to be released as written.
RESTS_ON = 0.5


RUNBOOK_WORDS = 0.7  # the share of a summary's content words from one runbook sentence, for it to be that text


# A summary that shares its words with a runbook sentence is still the model's: the words can be the
# runbook's and the direction the reverse (the 0.5B wrote "HikariCP pool exhaustion causes slow queries
# or lock waits" from a runbook line naming slow queries and lock waits as the causes of exhaustion).
READING_OF = {
    "en": "The model's reading of runbook {s} (not confirmed): ",
    "zh": "模型对运维手册 {s} 的概括（未经证实）：",
}


def _unconfirmed(text: str, claims: list[Claim], lang: str) -> str:
    """The model's unmeasured statement as written, labelled as the model's: a summary that is mostly one
    runbook sentence names the runbook it reads (whose sentence is quoted verbatim as guidance); any other
    is a likely cause, not a confirmed one."""
    if not text:
        return ""
    if not re.search(r"[.!?。！？]$", text):  # the label makes it a sentence: it ends as one
        text += "。" if lang == "zh" else "."
    for claim in claims:
        if claim.claim_type == "guidance" and content_overlap(text, claim.claim_text) >= RUNBOOK_WORDS:
            return READING_OF[lang].format(s=_source(claim)) + text
    return LIKELY[lang] + text


def _said(claims: list[Claim]) -> str:
    """The released claims and their cited excerpts: what a conclusion may rest on."""
    return " ".join([c.claim_text for c in claims] + [b.evidence_excerpt for c in claims for b in c.evidence_bindings])


def _rests_on(text: str, said: str) -> bool:
    return content_overlap(text, said) >= RESTS_ON


BACKED = ("direct_evidence", "indirect_support")


def backed_claims(cited: ExecutorEvidence, verdict: VerifierOutput | None) -> list[Claim]:
    """What a low-confidence answer may cite: the claims the verifier found directly or indirectly
    supported, never one found unsupported (its evidence would read as a source for it)."""
    if verdict is None:
        return list(cited.claims)
    backed = {f.fact for f in verdict.facts_checked if f.verification in BACKED}
    return [c for c in cited.claims if c.claim_text in backed]


def fallback_gaps(verdict: VerifierOutput, question: str, lang: str) -> list[str]:
    """A fallback's gaps: the facts the verdict found without evidence, less those that restate the question
    (what the asker reported is no gap in the evidence); when that leaves none, the one sentence that says
    the draft restated the question, so "some gaps remain" is never followed by "(none)"."""
    return evidence_gaps(verdict, question) or [RESTATED["zh" if lang == "zh" else "en"]]


def fallback(
    kind: FallbackType,
    lang: str,
    confirmed_claims: list[Claim],
    verdict: VerifierOutput | None,
    gaps: list[str],
    steps: list[str],
    ledger: dict[str, LedgerEntry],
    cited: ExecutorEvidence | None,
    scope: QuestionScope | None = None,
) -> Release:
    """``confirmed_claims``: claims that passed the guard (never rejected ones); with a verdict, only
    the findings it found directly evidenced count as confirmed, never a runbook's guidance (that is a
    next step, attributed to its runbook). ``gaps`` are sentences for the user."""
    drafted = [*confirmed_claims, *(cited.claims if cited is not None else [])]
    guidance = {c.claim_text: c for c in drafted if c.claim_type == "guidance"}
    if verdict is not None:
        direct = {f.fact for f in verdict.facts_checked if f.verification == "direct_evidence"}
        facts = [c for c in drafted if c.claim_text in direct]
    else:
        facts = list(confirmed_claims)
    # What is confirmed is what the tools measured: the lines the confirmed findings cite, verbatim.
    lines, _ = as_measured([c for c in facts if c.claim_type != "guidance" and not withheld(c.claim_text)], [])
    confirmed = list(dict.fromkeys(c.claim_text for c in lines))
    scattered = None
    if not steps:
        steps = [_attributed(c) for c in list(guidance.values()) or _added_guidance(ledger)]
        scattered = scattered_guidance(ledger, lang) if steps else None
    unseen = limitation(scope, lang) if scope is not None else None
    gaps = [g for g in (unseen, scattered) if g] + gaps
    failures = tool_failures(ledger)
    if kind == "INSUFFICIENT_EVIDENCE" and failures:
        kind, gaps = "TOOL_ERROR", [*failures, *gaps]
    all_gaps = [g for g in dict.fromkeys(gaps) if g and not withheld(g)]
    steps = [s for s in steps if not quotes_instructions(s)]
    template = kind if kind in ("LOW_CONFIDENCE", "TOOL_ERROR", "MODEL_TIMEOUT") else "INSUFFICIENT_EVIDENCE"
    head, c_title, g_title, s_title = TEMPLATES[(template, lang)]

    def block(title: str, items: list[str]) -> str:
        return "\n".join([title, *[f"- {i}" for i in (items or [NONE[lang]])]])

    # What the tools measured stays: their lines about the asked components, and the ranking's suspects
    # when the question is about the whole system.
    measured = measured_lines(ledger, scope)
    suspects = analyzed_causes(ledger, [], scope) or _ranked([], ledger, scope)
    blocks = [head, block(c_title, confirmed), block(g_title, all_gaps), block(s_title, steps)]
    if measured:
        blocks.insert(1, block(MEASURED[lang], measured))
    first = head
    if suspects and suspects[0].added_by == "analyzer":
        # The analyzers' cause is the first sentence, labelled; the caveat follows it.
        first = composed_conclusion(suspects[0], lang) + " " + BY_ANALYSIS[lang]
        blocks.insert(0, first)
        if suspects[1:]:
            blocks.append(block(ANALYZED[lang], [f"{c.component}: {c.cause}" for c in suspects[1:]]))
    elif suspects:
        blocks.append(block(SUSPECTS[lang], [f"{c.component} ({c.category})" for c in suspects]))
    text = "\n".join(blocks)
    # A low-confidence answer cites the draft's backed claims; any other cites the lines it lists as confirmed.
    backed = backed_claims(cited, verdict) if cited is not None and kind == "LOW_CONFIDENCE" else lines
    refs = _references(backed, ledger)
    payload = SafeFallbackPayload(
        fallback_type=kind,
        text=text,
        confirmed=confirmed,
        gaps=all_gaps,
        next_steps=steps,
        references=refs,
        measured=measured,
        root_causes=suspects,
    )
    return Release("SAFE_FALLBACK", payload, "FALLBACK", text, first)


def _measured_spans(ledger: dict[str, LedgerEntry], scope: QuestionScope | None) -> list[Span]:
    """The first telemetry lines the answer could cite about the asked components."""
    admit = scope.covers_key if scope is not None else None
    return [s for s in build_catalog(ledger, 12, admit) if s.tool_name != "lookup_knowledge"][:MEASURED_LINES]


def measured_lines(ledger: dict[str, LedgerEntry], scope: QuestionScope | None) -> list[str]:
    """Those lines as text, each with its key."""
    return [f"{s.text} [{s.key}]" for s in _measured_spans(ledger, scope)]


def measured_claims(ledger: dict[str, LedgerEntry], scope: QuestionScope | None) -> list[Claim]:
    """Those lines as findings the system added: the tool's own text, cited to itself, marked added."""
    return [
        Claim(
            claim_id=f"measured-{k}",
            claim_type="finding",
            claim_text=s.text,
            support_level="added",
            evidence_bindings=[s.binding()],
        )
        for k, s in enumerate(_measured_spans(ledger, scope), 1)
    ]


def _source(claim: Claim) -> str:
    """The runbook a guidance claim quotes."""
    return claim.evidence_bindings[0].source_id.split("#")[0] if claim.evidence_bindings else ""


def _attributed(claim: Claim) -> str:
    """A runbook sentence as a next step, with the runbook it is from."""
    source = _source(claim)
    return f"{claim.claim_text} ({source})" if source else claim.claim_text


def tool_failures(ledger: dict[str, LedgerEntry]) -> list[str]:
    """One line per failed evidence tool when evidence tools were called and none answered with
    evidence or a clean empty result (``no_data`` is an answer: nothing matched)."""
    calls = [e for e in ledger.values() if e.tool_name in EVIDENCE_TOOLS]
    if not calls or any(e.result.status != "error" for e in calls):
        return []
    return list(dict.fromkeys(f"{e.tool_name}: {e.result.error or 'failed'}" for e in calls))


def guard_gaps(lang: str, rejected: int, parse_status: str | None, missing_info: list[str]) -> list[str]:
    """What the user is told when the guard stops a draft: counts and plain sentences, no internals."""
    gaps = []
    if parse_status and parse_status != "valid":
        gaps.append(NO_ANSWER[lang].format(status=parse_status))
    if rejected:
        gaps.append(UNVERIFIED[lang].format(n=rejected))
    return gaps + missing_info
