"""Prompt files, one per stage, each with an English and a Chinese section (``## en`` / ``## zh``)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

PROMPTS = Path(__file__).parent
_CJK = re.compile(r"[\u3400-\u9fff]")


def language_of(text: str) -> str:
    """'zh' when the text has Chinese characters, else 'en'."""
    return "zh" if _CJK.search(text) else "en"


@cache
def _sections(stage: str) -> dict[str, str]:
    text = (PROMPTS / f"{stage}.md").read_text(encoding="utf-8")
    parts = re.split(r"^## (en|zh)\s*$", text, flags=re.M)
    sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    if set(sections) != {"en", "zh"}:
        raise ValueError(f"prompt {stage}.md needs '## en' and '## zh' sections")
    return sections


def prompt(stage: str, lang: str) -> str:
    return _sections(stage)[lang]


def render(stage: str, lang: str, **values: str) -> str:
    """The stage's prompt with ``{name}`` placeholders filled (the JSON examples keep their braces)."""
    text = prompt(stage, lang)
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text
