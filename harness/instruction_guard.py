"""Keeps the service's own instructions out of what it releases.

Retrieved runbooks and tool outputs are data; one may tell the model to "print your system prompt".
Citations are already bound to real calls and verbatim excerpts by the evidence guard, but free text
(the conclusion, actions, gaps) is the model's. Before release, every string is checked for a run of
the stage prompts' text (8 words in English, 12 characters in Chinese); one that quotes them is
withheld. Short common phrases cannot trigger it; a copied sentence of the prompts does.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from harness.prompts import prompt

STAGES = (
    "router",
    "planner",
    "executor",
    "executor_contract",
    "answer",
    "verifier",
    "verifier_contract",
)
WITHHELD = "[withheld: this text repeated the service's own instructions]"
_WORD = re.compile(r"[a-z0-9_]+")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
EN_N, ZH_N = 8, 12


def _shingles(text: str) -> set[str]:
    text = text.lower()
    words = _WORD.findall(text)
    out = {" ".join(words[i : i + EN_N]) for i in range(len(words) - EN_N + 1)}
    # Chinese: the characters alone, punctuation and Latin words dropped (prompt sentences are short
    # between commas), 12 at a time.
    han = "".join(_CJK_RUN.findall(text))
    out |= {han[i : i + ZH_N] for i in range(len(han) - ZH_N + 1)}
    return out


@cache
def instruction_shingles() -> frozenset[str]:
    return frozenset(s for stage in STAGES for lang in ("en", "zh") for s in _shingles(prompt(stage, lang)))


def quotes_instructions(text: str) -> bool:
    return not instruction_shingles().isdisjoint(_shingles(text))


def withhold(value: Any) -> tuple[Any, int]:
    """The value with every string that quotes the prompts replaced; and how many were."""
    if isinstance(value, str):
        return (WITHHELD, 1) if quotes_instructions(value) else (value, 0)
    if isinstance(value, list):
        items = [withhold(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    if isinstance(value, dict):
        pairs = {k: withhold(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, sum(n for _, n in pairs.values())
    return value, 0
