"""The lookup of a question leaves out what the asker has ruled out."""

from __future__ import annotations

from harness.ruled_out import without_ruled_out


def test_clauses_that_say_something_is_fine_are_not_searched_for() -> None:
    assert (
        without_ruled_out("商城下单时运费报价一直拿不到，quote 的 pod 都是 Running，CPU 和内存也正常，这是什么问题？")
        == "商城下单时运费报价一直拿不到，quote 的 pod 都是 Running，这是什么问题？"
    )
    assert (
        without_ruled_out(
            "Cart calls fail with timeouts; the cart pods look healthy. Nobody deployed cart today. What is going on?"
        )
        == "Cart calls fail with timeouts; What is going on?"
    )
    assert (
        without_ruled_out("Pages stopped arriving, but the rest of monitoring looks fine.") == "Pages stopped arriving,"
    )


def test_a_question_with_nothing_ruled_out_or_nothing_else_is_searched_as_asked() -> None:
    assert (
        without_ruled_out("TiKV_write_stall 告警触发了，怎么定位原因？")
        == "TiKV_write_stall 告警触发了，怎么定位原因？"
    )
    assert without_ruled_out("Everything looks normal.") == "Everything looks normal."
    # "not set" or "normally" is no verdict on the system
    asked = "If the retention is not set, does Prometheus normally keep 15 days of data?"
    assert without_ruled_out(asked) == asked
