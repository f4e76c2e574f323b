"""How the knowledge collection's two BM25 fields analyse text, with every stop word written out, and
how BM25 scores the English one.

Milvus Lite 3.2 takes a stop filter's list literally: ``["_english_"]`` drops only the token
"_english_", and jieba keeps punctuation ("，", "。", ".", "(") as tokens. So the index held a posting
for "the", "of" and "，" in almost every chunk, and Milvus Lite's BM25 (a Python loop over every posting
of every query term) spent much of a lookup's time on words that rank nothing (benchmarks/rag_latency.py
compares the two). Written out, the lists mean the same to Milvus Lite and to a Milvus server.
"""

from __future__ import annotations

import string
from typing import Any

# Lucene's English stop set (the words Milvus's "_english_" names) less "no" and "not": an error message
# turns on them ("No space left on device", "404 Not Found", "no route to host"), and so does a claim.
ENGLISH_STOP_WORDS = (
    "a an and are as at be but by for if in into is it of on or such that the their then there these they "
    "this to was will with"
).split()

# Single characters that jieba emits as tokens of their own: ASCII and CJK punctuation.
PUNCTUATION = sorted(set(string.punctuation) | set("，。、；：？！「」『』（）【】《》〈〉“”‘’…—～·"))

# Chinese function words that jieba emits as words of their own (particles, conjunctions, the copula):
# the Chinese counterpart of the English set, in nearly every Chinese chunk.
CHINESE_STOP_WORDS = list("的了是在和与及或也都而就着之其把被")

# jieba segments Chinese (the standard tokenizer gives it no hits); it also indexes the English text of
# a chunk, so the English set applies to it too.
ZH_ANALYZER: dict[str, Any] = {
    "tokenizer": "jieba",
    "filter": [{"type": "stop", "stop_words": [*ENGLISH_STOP_WORDS, *PUNCTUATION, *CHINESE_STOP_WORDS]}],
}
# A Milvus server also lower-cases and stems here; Milvus Lite's standard tokenizer lower-cases and
# applies the stop words only.
EN_ANALYZER: dict[str, Any] = {
    "tokenizer": "standard",
    "filter": [
        "lowercase",
        {"type": "stemmer", "language": "english"},
        {"type": "stop", "stop_words": ENGLISH_STOP_WORDS},
    ],
}
ANALYSED_FIELDS: dict[str, dict[str, Any]] = {"text": ZH_ANALYZER, "text_en": EN_ANALYZER}

# BM25's term-frequency saturation (k1) and length normalisation (b) for the English field, chosen on
# SciFact's *train* queries (benchmarks/retrieval_eval.py; a plateau at b 0.3-0.5 for k1 0.9-1.5, the
# defaults 1.5 / 0.75 below it): chunks run from a heading's few words to 1,500 characters, and full
# length normalisation ranked a long chunk that holds every query word under a short one that holds one.
# The jieba field keeps Milvus's defaults: no Chinese training split to choose by (CMRC2018 reports).
BM25_SCORING: dict[str, dict[str, float]] = {"sparse_en": {"bm25_k1": 0.9, "bm25_b": 0.5}}
DEFAULT_BM25_SCORING = {"bm25_k1": 1.5, "bm25_b": 0.75}  # Milvus's, for a field not named above


def bm25_scoring(field: str) -> dict[str, float]:
    """The k1 and b a BM25 field is indexed with (and an existing index must have)."""
    return BM25_SCORING.get(field, DEFAULT_BM25_SCORING)
