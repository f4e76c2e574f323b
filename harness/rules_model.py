"""A deterministic, zero-latency chat model for load tests and demos (``llm.backend: scripted``).

It speaks every stage's contract the way a careful model would, from what it is shown: the router
says DIAGNOSIS, the planner plans one knowledge lookup, the executor calls ``lookup_knowledge`` with
the question and then cites what came back (each claim binds to the real call id and quotes a line
of the returned evidence verbatim), and the verifier checks each claim against the tool trace it is
given. With no evidence, the executor says so and the release is a SAFE_FALLBACK. Nothing is
canned per question: what it returns follows from the real tool outputs, so traces, guards and
audit behave as with a real model, minus the model's time. Token usage is counted from characters
(4 per token) so runs reconcile.

It is not a diagnosis engine: the profile exists so that the service around the model (Ray, SSE,
retrieval, audit) can be measured and demonstrated without a GPU.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.contracts import ROOT_CAUSE_CATEGORIES
from harness.model import Message, ModelRequest, ModelResponse, ToolCall
from harness.recorder import Usage

_LINE_OK = re.compile(r'[^"\\\n\r\t]{24,}')


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _question(messages: list[Message]) -> str:
    users = [m.content for m in messages if m.role == "user"]
    return users[-1] if users else ""


def _quote(text: str, limit: int = 120) -> str:
    """A verbatim piece of ``text`` that survives JSON escaping unchanged (no quotes, backslashes or
    line breaks), so the evidence guard finds it in the tool output."""
    for run in _LINE_OK.findall(text):
        run = run.strip()
        if len(run) >= 24:
            return run[:limit].strip()
    return text.strip()[:limit]


class RulesModel:
    """``ChatModel`` for the scripted profile; see the module docstring."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        handler = {
            "router": self._router,
            "chat": self._chat,
            "planner": self._planner,
            "executor": self._executor,
            "verifier": self._verifier,
        }.get(request.stage, self._plain)
        response = handler(request)
        prompt = "".join(m.content for m in request.messages) + json.dumps(request.tools)
        out = response.text + json.dumps([c.arguments for c in response.tool_calls])
        response.usage = Usage(_tokens(prompt), _tokens(out))
        return response

    @staticmethod
    def _json(value: dict[str, Any]) -> ModelResponse:
        return ModelResponse(text=json.dumps(value, ensure_ascii=False))

    def _plain(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="")

    def _chat(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(
            text="I am raydiag (scripted profile): ask me about an incident and I cite the evidence I find."
        )

    def _router(self, request: ModelRequest) -> ModelResponse:
        return self._json({"intent": "DIAGNOSIS", "reason": "an incident question (scripted profile)", "answer": ""})

    def _planner(self, request: ModelRequest) -> ModelResponse:
        return self._json(
            {
                "selected_skill": None,
                "selection_reason": "the scripted profile plans one knowledge lookup",
                "plan": ["lookup_knowledge with the question", "answer from the returned evidence"],
                "reasoning": "one lookup, then cite it",
            }
        )

    def _executor(self, request: ModelRequest) -> ModelResponse:
        props = (request.json_schema or {}).get("properties", {})
        if "done" in props:  # a constructed run's tool round: the playbook has gathered the evidence
            return self._json({"done": True})
        if "summary" in props:  # the grounded answer's schema (executor_evidence_v1 has diagnosis_summary)
            return self._grounded_answer(request)
        results = [m for m in request.messages if m.role == "tool"]
        if not results and request.tools:
            query = _question(request.messages)[:500]
            return ModelResponse(
                text="",
                tool_calls=[ToolCall("call_lookup_1", "lookup_knowledge", {"query": query})],
                finish_reason="tool_calls",
            )
        claims: list[dict[str, Any]] = []
        for msg in results:
            data = json.loads(msg.content)
            blocks = (data.get("output") or {}).get("evidence") or []
            for block in blocks[:3]:
                text = str(block.get("text", ""))
                # A chunk's first line is its heading path ("Title > Section"); quote the body.
                body = text.split("\n", 1)[1] if "\n" in text else text
                quote = _quote(body) or _quote(text)
                if not quote:
                    continue
                claims.append(
                    {
                        "claim_id": f"claim-{len(claims) + 1}",
                        "claim_type": "symptom",
                        "claim_text": f"{block.get('title', '')}: {quote}",
                        "support_level": "direct",
                        "evidence_bindings": [
                            {
                                "source_type": "tool_trace",
                                "source_id": str(block.get("key", "")),
                                "tool_name": "lookup_knowledge",
                                "source_invocation_ids": [data.get("tool_call_id") or msg.tool_call_id or ""],
                                "evidence_excerpt": quote,
                            }
                        ],
                    }
                )
        summary = claims[0]["claim_text"] if claims else "No runbook matched the question."
        return self._json(
            {
                "answer_version": "executor_evidence_v1",
                "diagnosis_summary": summary,
                "claims": claims,
                "hypotheses": [],
                "recommended_actions": [
                    {"action_text": "follow the cited runbook's steps", "reason": "it matches", "evidence_bindings": []}
                ]
                if claims
                else [],
                "missing_info": ["live metrics and logs were not queried (scripted profile)"],
                "user_facing_answer": summary,
            }
        )

    def _grounded_answer(self, request: ModelRequest) -> ModelResponse:
        """Quotes the first measured lines as findings, one each; the first service in scope is the root
        cause, with the category its line suggests; the first runbook lines are the guidance."""
        text = request.messages[-1].content
        props = (request.json_schema or {}).get("properties", {})
        head, _, tail = text.partition("\nRunbook guidance" if "\nRunbook guidance" in text else "\n运维手册")
        measured = re.findall(r"^(E\d+) \[(\w+)\] (.+)$", head, re.M)
        guidance = re.findall(r"^(E\d+) \[[^\]]+\] ", tail, re.M)[:2]
        components = re.findall(r"^(?:Services in scope: |相关服务：)(.+)$", text, re.M)
        findings: list[dict[str, Any]] = []
        for alias, _tool, body in measured[:3]:
            # Cut at a word: a number cut in half is a number the evidence does not say.
            cut = body if len(body) <= 150 else body[:150].rsplit(" ", 1)[0]
            findings.append({"text": cut.rstrip(" ,;"), "evidence": [alias]})
        answer: dict[str, Any] = {}
        if "findings" in props:
            answer["findings"] = findings
        if "root_causes" in props:
            causes = []
            if components and findings:
                first = components[0].split(", ")[0]
                # The contract's categories, not a copy: a category the ranking learns is read here too.
                category = next((c for c in ROOT_CAUSE_CATEGORIES if f"Suspected {c}" in text), "unknown")
                cause = findings[0]["text"][:120]
                causes.append(
                    {"component": first, "cause": cause, "category": category, "confidence": "medium", "findings": [1]}
                )
            answer["root_causes"] = causes
        if "guidance" in props:
            answer["guidance"] = guidance
        answer["hypotheses"] = []
        answer["summary"] = findings[0]["text"][:240] if findings else "No measured evidence; see the runbook guidance."
        return self._json(answer)

    def _compact_verifier(self, request: ModelRequest) -> ModelResponse:
        ids = re.findall(r"^(claim-\d+) \(", request.messages[-1].content, re.M)
        facts = [{"claim": i, "verification": "direct_evidence", "critical": True} for i in ids]
        return self._json(
            {
                "facts": facts,
                "verdict": "PASS" if facts else "REJECT",
                "groundedness_score": 0.9 if facts else 0.1,
                "rationale": "each claim quotes the output it cites" if facts else "no claims",
            }
        )

    def _verifier(self, request: ModelRequest) -> ModelResponse:
        if "facts" in (request.json_schema or {}).get("properties", {}):
            return self._compact_verifier(request)
        body = json.loads(request.messages[-1].content)
        structured = body.get("executor_structured_output") or {}
        traces = {
            inv: t.get("trace_ref", "")
            for t in body.get("tool_trace_summary") or []
            for inv in t.get("source_invocation_ids") or []
        }
        facts = []
        for claim in structured.get("claims") or []:
            ids = [i for b in claim.get("evidence_bindings") or [] for i in b.get("source_invocation_ids") or []]
            known = [i for i in ids if i in traces]
            facts.append(
                {
                    "fact": claim.get("claim_text", ""),
                    "is_critical": True,
                    "verification": "direct_evidence" if known else "no_evidence",
                    "detail": "the cited call is in the tool trace" if known else "no such call in the trace",
                    "evidence_refs": [
                        {"trace_ref": traces[i], "tool_name": "lookup_knowledge", "source_invocation_ids": [i]}
                        for i in known
                    ],
                }
            )
        grounded = bool(facts) and all(f["verification"] == "direct_evidence" for f in facts)
        return self._json(
            {
                "verdict": "PASS" if grounded else "REJECT",
                "groundedness_score": 0.9 if grounded else 0.1,
                "critical_fact_count": len(facts),
                "facts_checked": facts,
                "rationale": "every claim cites a call in the tool trace" if grounded else "claims lack evidence",
            }
        )
