"""How much of a query a keyword list can match in a document, judged by writing system.

BM25 (and BGE-M3's lexical weights) match tokens, and Chinese and English share none but the Latin
identifiers a Chinese sentence carries (``Pod``, ``kubectl``, an error string). A Chinese question
against an English runbook is scored on those few words alone, and fusion that trusts the keyword list
by its scores alone lets them outvote the dense list, which does understand the question. The share
computed here is what fusion scales a keyword hit's weight by.
"""

from __future__ import annotations

import re

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9_]+(?:[.'\-][A-Za-z0-9_]+)*")
# jieba's words in Chinese prose are about 1.5 characters long: the share counts tokens, not characters,
# so that one Chinese word weighs as much as one English word.
CJK_CHARS_PER_TOKEN = 1.5
# A document "has" a script once this share of its tokens is in it (a Chinese runbook is a quarter
# commands and identifiers; an English one may quote a stray Chinese word).
PRESENT = 0.1


def cjk_share(text: str) -> float:
    """Share of the text's tokens that are CJK words (0 for English, near 1 for plain Chinese prose)."""
    cjk = len(_CJK.findall(text)) / CJK_CHARS_PER_TOKEN
    latin = len(_LATIN_WORD.findall(text))
    total = cjk + latin
    return round(cjk / total, 4) if total else 0.0


def matchable(query_cjk: float, doc_cjk: float) -> float:
    """The share of the query's tokens that can find their like in the document: the CJK part when the
    document holds CJK words, the Latin part when it holds Latin ones, each ramping up to full while the
    document's share of that script grows to ``PRESENT``."""
    has_cjk = min(1.0, doc_cjk / PRESENT)
    has_latin = min(1.0, (1.0 - doc_cjk) / PRESENT)
    return query_cjk * has_cjk + (1.0 - query_cjk) * has_latin
