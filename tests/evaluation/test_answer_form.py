"""The answer-form checks read the payload only; each can fail on an answer the service once gave."""

from __future__ import annotations

from typing import Any

from evaluation.answer_form import answer_form, form_figures


def _report(conclusion: str, analysis: list[dict[str, Any]], causes: list[str], excerpts: list[str]) -> dict[str, Any]:
    return {
        "report": {"conclusion": {"text": conclusion}, "analysis": analysis},
        "root_causes": [{"component": c} for c in causes],
        "references": [{"source_type": "LOGS", "excerpt": e} for e in excerpts],
    }


LINE = "payment-service log template 'Slow query <*>: UPDATE orders SET status=? WHERE id=? (lock wait)': 16 lines"


def test_a_disclaimer_first_a_template_conclusion_and_model_findings_fail() -> None:
    disclaimer = _report(
        "No metrics or logs for single-user in the connected backends; the answer rests on runbook guidance only. "
        "Likely, not confirmed: The primary is currently refusing all new write commands,",
        [{"kind": "guidance", "text": "TODO https://github.com/elastic/beats/tree/master/packetbeat"}],
        [],
        [],
    )
    form = answer_form("DIAGNOSIS_REPORT", disclaimer)
    assert form == {
        "conclusion_finished": False,
        "first_sentence_acts": False,
        "model_findings": 0,
        "poor_guidance": 1,
    }
    template = _report(
        "payment-service log template 'Slow query <*>: UPDATE orders SET status=? WHERE id=? (lock wait)',",
        [
            {"kind": "finding", "text": "We need to copy the jmeter result files locally."},
            {"kind": "finding", "text": LINE},
        ],
        ["payment-service"],
        [LINE],
    )
    form = answer_form("DIAGNOSIS_REPORT", template)
    assert not form["conclusion_finished"] and form["model_findings"] == 1


def test_a_cause_first_or_a_plain_none_passes() -> None:
    cause = _report(
        "payment-service: queries waiting on row locks hold its database connections (16 new lines).",
        [{"kind": "finding", "text": LINE}, {"kind": "guidance", "text": "Look for slow queries holding connections."}],
        ["payment-service"],
        [LINE],
    )
    unconfirmed = _report("Likely, not confirmed: Transaction ID wraparound stopped writes.", [], [], [])
    fallback = {
        "text": "A reliable conclusion cannot be drawn from the evidence gathered.\nConfirmed:\n- (none)",
        "confirmed": [],
        "next_steps": ["Check the pool's active connections over time. (hikaricp)"],
    }
    forms = [
        answer_form("DIAGNOSIS_REPORT", cause),
        answer_form("DIAGNOSIS_REPORT", unconfirmed),
        answer_form("SAFE_FALLBACK", fallback),
        answer_form("CHAT_ANSWER", {"text": "hi"}),
    ]
    assert all(f["conclusion_finished"] and f["first_sentence_acts"] for f in forms[:3]) and forms[3] == {}
    assert form_figures(forms) == {
        "answers": 3,
        "conclusion_finished_rate": 1.0,
        "first_sentence_acts_rate": 1.0,
        "answers_with_model_findings": 0,
        "poor_guidance_lines": 0,
    }


def test_a_chinese_low_confidence_head_says_none_and_a_tool_failure_does_not() -> None:
    zh = {"text": "已获取的证据未能确认原因；以下是已有的信息和缺口，请谨慎参考。\n已确认信息：\n- （无）"}
    failed = {
        "text": "The evidence tools failed, so no evidence was gathered; this says nothing about the incident itself: "
        "ask again once they answer.\nConfirmed:\n- (none)"
    }
    assert answer_form("SAFE_FALLBACK", zh)["first_sentence_acts"]
    assert not answer_form("SAFE_FALLBACK", failed)["first_sentence_acts"]
