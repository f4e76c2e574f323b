"""Session memory stays bounded: a chatty session or many sessions cannot grow the ingress without limit."""

from harness.history import SessionHistory


def test_a_session_keeps_only_its_latest_turns() -> None:
    h = SessionHistory(max_sessions=10, max_turns=3)
    for i in range(7):
        h.add_now(("", "s1"), f"q{i}", f"a{i}")
    assert h.get_now(("", "s1")) == [("q4", "a4"), ("q5", "a5"), ("q6", "a6")]


def test_the_least_recently_used_session_is_forgotten_first() -> None:
    h = SessionHistory(max_sessions=2, max_turns=5)
    h.add_now(("", "old"), "q", "a")
    h.add_now(("", "mid"), "q", "a")
    assert h.get_now(("", "old"))  # reading a session makes it recent again
    h.add_now(("", "new"), "q", "a")
    assert h.get_now(("", "mid")) == []
    assert h.get_now(("", "old")) == [("q", "a")]
    assert h.get_now(("", "new")) == [("q", "a")]


def test_get_returns_a_copy() -> None:
    h = SessionHistory()
    h.add_now(("", "s"), "q", "a")
    h.get_now(("", "s")).append(("x", "y"))
    assert h.get_now(("", "s")) == [("q", "a")]
