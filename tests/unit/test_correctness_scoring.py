"""The answer-key rule of benchmarks/diagnosis_correctness.py, shared by answer_ceilings.py."""

from __future__ import annotations

from benchmarks.diagnosis_correctness import names_answer, names_cause, score

CASE = {"about": ["valkey", "cart"], "causes": [["password", "NOAUTH"], ["memory stress"]], "wrong": ["payment"]}


def test_an_answer_names_the_component_and_one_accepted_cause() -> None:
    assert names_answer(CASE, "Valkey rejects the cart's commands: NOAUTH, the password changed")
    assert not names_answer(CASE, "The password changed")  # no asked component
    assert not names_answer(CASE, "valkey-cart is slow")  # no accepted cause
    assert names_cause(CASE, "a Memory Stress experiment")


def test_a_root_cause_on_a_component_not_to_blame_is_misattributed_and_never_correct() -> None:
    payload = {
        "report": {"conclusion": {"text": "valkey NOAUTH: the password changed"}, "analysis": []},
        "root_causes": [{"component": "payment-service", "cause": "pool"}],
    }
    assert score(CASE, "DIAGNOSIS_REPORT", payload) == {"correct": False, "misattributed": True}
    payload["root_causes"] = []
    assert score(CASE, "DIAGNOSIS_REPORT", payload) == {"correct": True, "misattributed": False}
