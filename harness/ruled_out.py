"""What the asker has already ruled out is no topic to search the runbooks for.

On-call questions say what looks fine beside what is broken: "CPU and memory on product-catalog look
normal", "kafka 本身没动过", "valkey-cart 最近没有发版". A lookup of the whole question searched for those
words too: on the tuning half, a quote-service failure whose question said "CPU 和内存也正常" was answered
with the CPU-throttling runbook. The lookup of the question drops such clauses; the question itself
(routing, scope, the answer's prompt) is unchanged.
"""

from __future__ import annotations

import re

# Clause boundaries: punctuation (Western and CJK) and the conjunctions that turn to a contrast.
_BOUNDARY = re.compile(r"([,;:.!?，；：。！？]\s*|\s+(?:but|yet|while|though|although|whereas)\s+)", re.IGNORECASE)
_RULED_OUT = re.compile(
    r"\b(?:looks?|looked|seems?|seemed|is|are|was|were|stays?|stayed|remains?|all)\s+(?:all\s+|still\s+)?"
    r"(?:fine|normal|ok|okay|healthy|unchanged|stable|untouched|clean|up and running)\b"
    r"|\b(?:nobody|no one|nothing)\s+(?:was\s+)?(?:deployed|touched|changed|released)\b"
    # "no deploy", "no recent release", "no code change"
    r"|\bno\s+(?:[\w-]+\s+){0,2}?(?:deploy\w*|release\w*|changes?)\b"
    r"|\bhas(?:n't| not) (?:changed|been touched|been deployed)\b"
    # 正常 / 一切正常, 没(有)动过 / 发版 / 变化 / 问题 / 报错, 没有发(任何)新版本, (很)充足, 都活着
    r"|正常|没有?(?:动过|发版|变化|变过|问题|报错)|没有?发(?:任何)?新?版本|充足|都活着",
    re.IGNORECASE,
)


def without_ruled_out(question: str) -> str:
    """The question without its clauses that say something is fine or unchanged; the question itself
    when every clause does, or none."""
    pieces = _BOUNDARY.split(question)
    kept: list[str] = []
    for clause, boundary in zip(pieces[::2], [*pieces[1::2], ""], strict=True):
        if not _RULED_OUT.search(clause):
            kept.append(clause + boundary)
    text = "".join(kept).strip()
    return text if text and text != question.strip() else question
