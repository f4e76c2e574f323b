"""The citable spans of a run's tool outputs, numbered E1…En for the final answer (DESIGN.md §8).

Every span is a verbatim piece of one tool output's ``evidence`` blocks (a telemetry fact, a log
template, a runbook sentence) with its stable evidence key and the call that returned it. The final
answer's schema lets the model cite only these aliases; the system then fills each binding's tool,
invocation id, key and excerpt from the span, so a citation cannot point at anything that does not exist.
Spans are taken round-robin across calls (each call's strongest first), so every tool is represented.
Within a lookup, a runbook's symptom section comes last: it describes the alert the user already
described, so a small model citing it restates the question; the diagnosis and mitigation sections say
what the question does not (measured in benchmarks/results/diagnosis_quality.json).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from harness.contracts import EvidenceBinding
from harness.tools.base import LedgerEntry

SPAN_CHARS = 320
SPANS_PER_RUNBOOK_BLOCK = 2
# The sections of a runbook that describe the alert itself and what follows from it (the bundled
# runbooks' "Symptoms" / "现象", the public runbooks' "Impact" / "影响"): neither says why it happened.
_SYMPTOM_SECTION = re.compile(r"symptom|现象|症状|impact|影响", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?。！？；;])\s+")
# A line that starts a new piece of a runbook: a list item, a heading, a quote or a table row.
_ITEM_START = re.compile(r"^\s*(?:[-*+>#|]|\d+[.)])\s*")
_LINK = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CJK = re.compile(r"[\u4e00-\u9fff]")
# Shorter than this (a link counted as its text), a piece is a fragment, not a sentence to show.
MIN_SENTENCE_CHARS = 20
# Under this share of letters (Latin or Chinese) among its other characters, a piece is a timestamp or
# an output dump ("19:26:00 UTC | 2020-07-07 19:32:24 UTC |      0 |"), not a sentence.
MIN_LETTER_SHARE = 0.5
_LETTER = re.compile(r"[A-Za-z\u4e00-\u9fff]")
# Where fenced code was left out of a chunk's pieces.
CODE = ""
# Marks a piece that holds an introduction and its list: one statement, never split into sentences.
FOLDED = "\x00"
# A sentence that opens by pointing back at the one before ("If so, review the logs of these containers",
# "由于这个特定原因，该告警默认是被抑制的") says nothing on its own: it is shown joined to the sentence
# it points to, verbatim, or not at all.
# "If not set, …" stands alone: only "if so/not/yes" followed by a comma points back.
_POINTS_BACK = re.compile(
    r"^(?:if (?:so|not|yes)\s*[,，]|(?:if (?:this|that) is the case|otherwise|in (?:this|that|either|such a) case|"
    r"for (?:this|that) reason|that result|this result)\b|由于这|因此|所以|否则|如果是这样|如果不是[，,]|如果是的话|"
    r"在这种情况下|这种情况下)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Span:
    alias: str
    key: str
    tool_name: str
    call_id: str
    text: str
    # A runbook sentence from the section that describes the alert itself (it restates the question).
    describes_symptoms: bool = False

    def binding(self) -> EvidenceBinding:
        """The citation of this span, every field copied from the tool output (never the model's)."""
        return EvidenceBinding(
            source_type="tool_trace",
            source_id=self.key,
            tool_name=self.tool_name,
            source_invocation_ids=[self.call_id],
            evidence_excerpt=self.text,
        )


def _pieces(body: str) -> list[str]:
    """The paragraphs and list items of a runbook chunk, each on one line: runbooks are hard-wrapped at
    80 columns, and a line is not a sentence ("readiness and liveness probes may be incorrect - wrong
    port or command," ran on to its next line). Fenced code is left out: a query or a command line is
    no sentence an engineer reads as guidance."""
    pieces: list[str] = []
    current: list[str] = []
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            if current:  # text on either side of code is not one piece
                pieces.append(" ".join(current))
                current = []
            pieces.append(CODE)
            continue
        if fenced:
            continue
        if not line.strip() or _ITEM_START.match(line):
            if current:
                pieces.append(" ".join(current))
            current = [line.strip()] if line.strip() else []
        else:
            current.append(line.strip())
    if current:
        pieces.append(" ".join(current))
    return _fold_lists(pieces)


def _fold_lists(pieces: list[str]) -> list[str]:
    """A list joined to the line that introduces it, while the whole fits one span: "如果是数据库问题触发
    OOM，常见原因有：" alone says there are causes and names none, and "- 资源不足。" alone is a fragment
    too short to show, so a runbook's list of causes was never released. Joined as the runbook has them,
    markers and all (whitespace is what differs), so the span is still a verbatim excerpt of the tool
    output (``harness/stages/evidence_guard.py``)."""
    out: list[str] = []
    folding = False
    for piece in pieces:
        if piece == CODE:  # what a line introduced was the code, and the text after it is not verbatim next
            folding = False
            continue
        is_list_item = bool(_ITEM_START.match(piece)) and piece.lstrip()[:1] not in ("#", ">", "|")
        if folding and is_list_item and len(out[-1]) + 1 + len(piece) <= SPAN_CHARS:
            out[-1] = (out[-1] if out[-1].startswith(FOLDED) else FOLDED + out[-1]) + " " + piece
            continue
        folding = piece.rstrip().endswith((":", "："))
        out.append(piece)
    return out


def _split_sentences(piece: str) -> list[str]:
    """A piece's sentences, never split inside inline code or parentheses: "`Slow query ... (lock wait)`"
    is one term (its "... " ended a sentence mid-code, and the next began with "(lock wait)`）")."""
    out = [""]
    depth = 0  # open parentheses: "(active stays at max while traffic is flat; enable …)" is one sentence
    for n, part in enumerate(piece.split("`")):
        if n % 2:  # inside backticks
            out[-1] += f"`{part}`"
            continue
        pieces = _SENTENCE.split(part)
        for k, bit in enumerate(pieces):
            if k and depth <= 0:
                out.append("")
            elif k:
                out[-1] += " "
            out[-1] += bit
            depth += bit.count("(") + bit.count("（") - bit.count(")") - bit.count("）")
    return out


def _sentences(text: str) -> list[str]:
    """Verbatim pieces of a runbook chunk: its sentences, the heading line ("Title > Section") skipped."""
    lines = text.split("\n", 1)
    body = lines[1] if len(lines) > 1 and ">" in lines[0] else text
    parts: list[str] = []
    for piece in _pieces(body):
        antecedent = False  # only a sentence of the same piece: pieces are split at code and list items
        for part in [piece[len(FOLDED) :]] if piece.startswith(FOLDED) else _split_sentences(piece):
            part = part.strip().lstrip("-*+>#|0123456789.) ").strip()
            if not _POINTS_BACK.match(part):
                parts.append(part)
            elif antecedent and parts[-1] and len(parts[-1]) + 1 + len(part) <= SPAN_CHARS:
                parts[-1] += " " + part
            else:
                parts.append("")  # it points outside its piece, or the two are too long to show
            antecedent = True
    # A link is its text: "See [Debugging Pods](https://…)" is a pointer, not a sentence. A line that
    # ends introducing something ("the log looks like this:") is nothing without it.
    return [
        clip(part)
        for part in parts
        if len(_LINK.sub(r"\1", part)) >= MIN_SENTENCE_CHARS
        and not part.endswith((":", "："))
        and _prose(part)
        and is_guidance(part)
    ]


# What no engineer can act on, however a runbook spells it: a note to its authors ("TODO https://…"), a
# form to fill in ("`<your-pword>` is your Docker password"), a sentence about the page itself ("This
# page shows how to …", "本文介绍…").
_NOTE_TO_AUTHORS = re.compile(r"^\W*(?:TODO|FIXME|TBD|XXX)\b", re.IGNORECASE)
# Two placeholders for the reader's own values make a form, not a step ("kubectl logs <pod>" is a step,
# and an alert's message template, "Node {{ $labels.node }} is evicting Pods …", says what fires and why).
_PLACEHOLDER = re.compile(r"<your[-_ ][^>]{1,40}>")
_ABOUT_THE_PAGE = re.compile(
    r"^(?:this|the following) (?:page|document|doc|guide|runbook|section|tutorial|article|playbook)\b|"
    r"^(?:本文|本页|本文档|本节|本章|本手册)(?![点件])",  # 本节点 is "this node", 本文件 "this file"
    re.IGNORECASE,
)
_URL = re.compile(r"https?://\S+|www\.\S+")
# Fewer words than this once links and addresses are taken out, a line is a pointer or a fragment.
MIN_GUIDANCE_WORDS = 5


def words_of(text: str) -> float:
    """Words, counting two Chinese characters as one (a Chinese sentence has no spaces)."""
    cjk = len(_CJK.findall(text))
    return len(_CJK.sub(" ", text).split()) + cjk / 2


def is_guidance(part: str) -> bool:
    """A runbook line an engineer could act on: not a note to its authors, a template with placeholders,
    a sentence about the page itself, or a bare link (fewer than five words besides its addresses)."""
    bare = _URL.sub(" ", _LINK.sub(r"\1", part))
    return not (
        _NOTE_TO_AUTHORS.search(part)
        or len(_PLACEHOLDER.findall(part)) >= 2
        or _ABOUT_THE_PAGE.search(part)
        or words_of(bare) < MIN_GUIDANCE_WORDS
    )


def _prose(part: str) -> bool:
    """Words, not a table row or an output dump: a row has cells ("| a | b |"), a dump few letters or
    columns aligned with runs of spaces ("Total DISK WRITE :       0.")."""
    chars = [c for c in part if not c.isspace()]
    return (
        part.count("|") < 2
        and "   " not in part
        and sum(bool(_LETTER.match(c)) for c in chars) >= MIN_LETTER_SHARE * len(chars)
    )


def clip(text: str) -> str:
    """At most ``SPAN_CHARS``, cut after a whole word where one ends in the last third (a verbatim prefix
    still, so the citation check holds): "hikaricp_connections_active 9x its bas" read as a typo."""
    if len(text) <= SPAN_CHARS:
        return text
    cut = text[:SPAN_CHARS]
    space = cut.rfind(" ")
    return cut[:space].rstrip(" ,;:") if space >= SPAN_CHARS * 2 // 3 else cut


# What makes a runbook sentence worth showing an on-call engineer who asks why: it names a cause (English
# and Chinese markers); next, it says what to look at. Causes first: of a diagnosis list's "Check pod
# events" and "readiness probes may be incorrect", the second answers the question.
_CAUSES = re.compile(
    r"\b(?:caus\w*|due to|because|result\w*|usually|typically|common\w*|often|can be|could be|may be|might|"
    r"lead\w*|trigger\w*|exhaust\w*|leak\w*|misconfigur\w*|incorrect\w*|wrong|missing|too (?:low|high|many|few|"
    r"small|large|short|long)|limit\w*)\b|"
    r"原因|导致|由于|因为|通常|可能|常见|引起|造成|不正确|错误|丢失|缺失|过低|过高|过多|过短|不足|超过|失败",
    re.IGNORECASE,
)
_CHECKS = re.compile(r"\b(?:check\w*|verify|look for|inspect)\b|检查|排查|确认|查看", re.IGNORECASE)
_DIAGNOSIS_SECTION = re.compile(
    r"diagnos|cause|meaning|troubleshoot|investigat|排查|原因|诊断|含义|分析", re.IGNORECASE
)


def telling(text: str) -> float:
    """How much a runbook sentence says about causes (up to 2), then checks (0.5); a fragment of under
    six words loses 2."""
    words = len(text.split()) if not _CJK.search(text) else len(text) / 2
    tells = min(2, len(_CAUSES.findall(text))) + (0.5 if _CHECKS.search(text) else 0)
    return tells - (2 if words < 6 else 0)


def _telling(sentences: list[str], heading: str) -> list[str]:
    """A block's ``SPANS_PER_RUNBOOK_BLOCK`` sentences that say most about causes and checks, in the
    block's order: a chunk's first two sentences were often a greeting or a shell prompt ("Dave, I have
    observed latency spikes…", "> CONFIG SET …") while the cause sat further down."""
    section = 2 if _DIAGNOSIS_SECTION.search(heading.split(">")[-1]) else 0

    def worth(i: int) -> float:
        return section + telling(sentences[i]) - i * 0.01

    best = sorted(range(len(sentences)), key=worth, reverse=True)[:SPANS_PER_RUNBOOK_BLOCK]
    return [sentences[i] for i in sorted(best)]


def _describes_symptoms(block: dict[str, object]) -> bool:
    section = str(block.get("heading") or "").split(">")[-1]
    return bool(_SYMPTOM_SECTION.search(section))


def _entry_spans(entry: LedgerEntry) -> list[tuple[str, str, bool]]:
    if entry.result.status != "success":
        return []
    spans: list[tuple[str, str, bool]] = []
    blocks = [b for b in entry.result.output.get("evidence") or [] if isinstance(b, dict)]
    if entry.tool_name == "lookup_knowledge":
        blocks.sort(key=_describes_symptoms)  # stable: the search's order otherwise
    for block in blocks:
        if not block.get("key") or not block.get("text"):
            continue
        key, text = str(block["key"]), str(block["text"])
        if entry.tool_name == "lookup_knowledge":
            symptoms = _describes_symptoms(block)
            spans += [(key, s, symptoms) for s in _telling(_sentences(text), str(block.get("heading") or ""))]
        else:
            spans.append((key, clip(text), False))
    return spans


def build_catalog(
    ledger: dict[str, LedgerEntry], max_spans: int, admit: Callable[[str], bool] | None = None
) -> list[Span]:
    """``admit``: which evidence keys may be cited (the telemetry of the services the question is about,
    ``harness/question_scope.py``); the others take no place in the list."""
    per_call = [(entry, [s for s in _entry_spans(entry) if admit is None or admit(s[0])]) for entry in ledger.values()]
    picked: list[tuple[LedgerEntry, str, str, bool]] = []
    depth = 0
    while len(picked) < max_spans and any(depth < len(spans) for _, spans in per_call):
        for entry, spans in per_call:
            if depth < len(spans) and len(picked) < max_spans:
                key, text, symptoms = spans[depth]
                if not any(p[1] == key and p[2] == text for p in picked):
                    picked.append((entry, key, text, symptoms))
        depth += 1
    return [
        Span(f"E{n}", key, e.tool_name, e.tool_call_id, text, symptoms)
        for n, (e, key, text, symptoms) in enumerate(picked, 1)
    ]


def candidate_components(ledger: dict[str, LedgerEntry]) -> list[str]:
    """Services the run's tools named, the anomaly ranking's order first, then the components the
    cluster analyzers found something about, the weightiest first."""
    found: list[str] = []
    weighed: dict[str, int] = {}
    for entry in ledger.values():
        for f in entry.result.output.get("findings") or [] if entry.result.status == "success" else []:
            if isinstance(f, dict) and f.get("component"):
                name = str(f["component"])
                weighed[name] = max(weighed.get(name, -1), int(f.get("weight") or 0))
    for entry in ledger.values():
        if entry.tool_name == "rank_anomalies":
            found += [str(r.get("service")) for r in entry.result.output.get("ranking") or [] if r.get("service")]
    for entry in ledger.values():
        if entry.result.status != "success":
            continue
        service = entry.args.get("service") or entry.result.output.get("service")
        if isinstance(service, str) and service:
            found.append(service)
    found += sorted(weighed, key=lambda name: -weighed[name])
    return list(dict.fromkeys(found))
