from __future__ import annotations

import pytest

from deployments.sse import comment, frame, frame_event, parse
from harness.contracts import DoneEvent, MetadataEvent, StatusEvent


def test_frame_and_parse_round_trip() -> None:
    events = [
        MetadataEvent(session_id="s-1", run_id="r-1"),
        StatusEvent(code="ROUTING", detail="第一行\n第二行: with colon"),
        DoneEvent(outcome="SUCCESS"),
    ]
    text = b"".join(frame_event(e, i) for i, e in enumerate(events, 1)).decode() + comment("keep-alive").decode()
    parsed = parse(text)
    assert [name for name, _ in parsed] == ["metadata", "status", "done"]
    assert parsed[1][1]["detail"] == "第一行\n第二行: with colon"
    # One data line per event even when the payload holds newlines.
    assert text.count("data: ") == 3


def test_frame_rejects_bad_names() -> None:
    for bad in ["", "a\nb", "x:y"]:
        with pytest.raises(ValueError):
            frame(bad, {})
