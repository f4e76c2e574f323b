"""Writing-system shares that script-aware fusion and the keyword-only attempt read."""

from __future__ import annotations

import pytest

from rag.script import CJK_CHARS_PER_TOKEN, cjk_share, matchable


def test_cjk_share_counts_words_not_characters() -> None:
    assert cjk_share("No space left on device") == 0.0
    assert cjk_share("磁盘空间不足") == 1.0
    assert cjk_share("") == 0.0
    # 6 CJK characters = 4 words of jieba's length, beside 2 Latin words ("Pod", "CrashLooping").
    mixed = cjk_share("Pod 处于 CrashLooping 状态中断")
    assert mixed == pytest.approx((6 / CJK_CHARS_PER_TOKEN) / (6 / CJK_CHARS_PER_TOKEN + 2), abs=1e-4)
    assert cjk_share("HikariPool-1 连接池") == pytest.approx(2 / (2 + 1), abs=1e-4)  # one Latin word


def test_matchable_is_the_part_of_the_query_the_document_can_match() -> None:
    assert matchable(0.9, 0.0) == pytest.approx(0.1)  # a Chinese question, an English runbook
    assert matchable(0.9, 0.8) == pytest.approx(1.0)  # a Chinese runbook: commands and words both
    assert matchable(0.0, 0.0) == pytest.approx(1.0)
    assert matchable(0.0, 1.0) == pytest.approx(0.0)  # an English question, pure Chinese prose
    assert matchable(0.5, 0.05) == pytest.approx(0.5 * 0.5 + 0.5)  # a stray Chinese word counts half
