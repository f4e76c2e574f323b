"""Session memory stays bounded: a chatty session or many sessions cannot grow the ingress without limit."""

from harness.history import SessionHistory


def test_a_session_keeps_only_its_latest_turns() -> None:
    h = SessionHistory(max_sessions=10, max_turns=3)
    for i in range(7):
        h.add(("", "s1"), f"q{i}", f"a{i}")
    assert h.get(("", "s1")) == [("q4", "a4"), ("q5", "a5"), ("q6", "a6")]


def test_the_least_recently_used_session_is_forgotten_first() -> None:
    h = SessionHistory(max_sessions=2, max_turns=5)
    h.add(("", "old"), "q", "a")
    h.add(("", "mid"), "q", "a")
    assert h.get(("", "old"))  # reading a session makes it recent again
    h.add(("", "new"), "q", "a")
    assert h.get(("", "mid")) == []
    assert h.get(("", "old")) == [("q", "a")]
    assert h.get(("", "new")) == [("q", "a")]


def test_get_returns_a_copy() -> None:
    h = SessionHistory()
    h.add(("", "s"), "q", "a")
    h.get(("", "s")).append(("x", "y"))
    assert h.get(("", "s")) == [("q", "a")]
