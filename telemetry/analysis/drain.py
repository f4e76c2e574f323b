"""Log templates by the Drain algorithm (He et al., "Drain: An Online Log Parsing Approach with Fixed
Depth Tree", ICWS 2017), written from the paper.

Each line is masked (numbers, hex ids, IPs, UUIDs become ``<*>``), split into tokens and routed down a
fixed-depth tree: by token count, then by its first ``depth - 2`` tokens (a token with a digit goes
to the wildcard child, as does any token once a node has ``max_children`` children). In the leaf the
line joins the most similar template (share of positions with the same token) if that share reaches
``similarity``; the template then turns the positions that differ into ``<*>``. Otherwise it starts
a new template. Template ids are assigned in order of first appearance, so the same lines in the same
order always give the same ids.

One addition to the paper: a token naming the statement's place in the source (``t.s.TravelServiceImpl#457``
as a logback ``%logger#%line`` pattern writes it, ``Main.java:42``, ``handler.py:88``) is kept and two
lines from different places never share a template. A template is one log statement (the ground truth
of Loghub's labels); masking the line number would merge neighbouring statements of one class, and a
handler that stops before its second statement would then still look as if it logged the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

WILDCARD = "<*>"
_MASKS = [
    re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
    re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"),
    re.compile(r"\b0x[0-9a-fA-F]+\b"),
    re.compile(r"\b[0-9a-fA-F]{16,}\b"),
    re.compile(r"(?<![A-Za-z])[-+]?\d+(?:\.\d+)?(?:ms|s|us|ns|kb|mb|gb|%)?(?![A-Za-z])"),
]
_DIGIT = re.compile(r"\d")
# A place in the source, narrowly: a package-qualified class and a line as logback abbreviates it
# (``t.s.TravelServiceImpl#457``), or a source file and a line (``Main.java:42``). Narrow because a
# number kept is a template per value: a bare ``CPU#3`` or ``Order#1234`` is a counter or an id, and
# extensions that are also host names or field names (``.cc``, ``.rs``, ``.ts``, ``.h``) are left out.
# One capturing group: ``split`` puts the places at the odd indexes.
_SOURCE_PLACE = re.compile(
    r"((?<![\w.$])(?:[a-z][\w$]*\.)+[A-Z][\w$]*#\d+\b"
    r"|(?<![\w.$/-])[\w/-]*\w\.(?:java|kt|scala|groovy|py|go|rb|js|cs|cpp|c|php|ex|erl):\d+\b)"
)


def mask(line: str) -> str:
    """The line with its variable parts as ``<*>``; source places (``a.b.Foo#12``, ``foo.py:12``) stay."""
    return "".join(part if i % 2 else _masked(part) for i, part in enumerate(_SOURCE_PLACE.split(line)))


def _masked(text: str) -> str:
    for pattern in _MASKS:
        text = pattern.sub(WILDCARD, text)
    return text


def _places(tokens: list[str]) -> tuple[tuple[int, str], ...]:
    """The source places of a line's tokens with their positions: two lines share a template only
    where these are the same."""
    return tuple((i, t) for i, t in enumerate(tokens) if _SOURCE_PLACE.search(t))


@dataclass
class Template:
    id: int
    tokens: list[str]
    size: int = 0
    places: tuple[tuple[int, str], ...] = ()  # fixed at creation: only lines with the same places join

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


@dataclass
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    templates: list[Template] = field(default_factory=list)


class Drain:
    def __init__(self, depth: int = 4, similarity: float = 0.4, max_children: int = 100) -> None:
        if depth < 3:
            raise ValueError("depth must be at least 3")
        self.depth = depth
        self.similarity = similarity
        self.max_children = max_children
        self.root = _Node()
        self.templates: list[Template] = []

    def add(self, line: str) -> Template:
        tokens = mask(line).split()
        leaf = self._leaf(tokens)
        best, best_sim = None, -1.0
        places = _places(tokens)
        for tpl in leaf.templates:
            if tpl.places != places:
                continue
            sim = _similarity(tpl.tokens, tokens)
            if sim > best_sim:
                best, best_sim = tpl, sim
        if best is not None and best_sim >= self.similarity:
            best.tokens = [a if a == b else WILDCARD for a, b in zip(best.tokens, tokens, strict=True)]
        else:
            best = Template(len(self.templates) + 1, list(tokens), places=places)
            self.templates.append(best)
            leaf.templates.append(best)
        best.size += 1
        return best

    def _leaf(self, tokens: list[str]) -> _Node:
        node = self.root.children.setdefault(str(len(tokens)), _Node())
        for token in tokens[: self.depth - 2]:
            key = WILDCARD if _DIGIT.search(token) else token
            if key not in node.children and len(node.children) >= self.max_children:
                key = WILDCARD
            node = node.children.setdefault(key, _Node())
        return node


def _similarity(template: list[str], tokens: list[str]) -> float:
    if not tokens:
        return 1.0 if not template else 0.0
    same = sum(1 for a, b in zip(template, tokens, strict=True) if a == b and a != WILDCARD)
    return same / len(tokens)


def mine(lines: list[str], depth: int = 4, similarity: float = 0.4) -> tuple[list[Template], list[int]]:
    """Templates of ``lines`` and each line's template id."""
    drain = Drain(depth, similarity)
    ids = [drain.add(line).id for line in lines]
    return drain.templates, ids


def grouping_accuracy(predicted: list[int], truth: list[str]) -> float:
    """Share of lines whose predicted group holds exactly the lines of their true group (Zhu et al.,
    ICSE-SEIP 2019): the measure Loghub's benchmarks report."""
    groups: dict[int, set[int]] = {}
    true_groups: dict[str, set[int]] = {}
    for i, (p, t) in enumerate(zip(predicted, truth, strict=True)):
        groups.setdefault(p, set()).add(i)
        true_groups.setdefault(t, set()).add(i)
    right = sum(len(members) for members in groups.values() if members == true_groups[truth[next(iter(members))]])
    return right / len(predicted) if predicted else 1.0
