"""Heading-aware chunking of markdown and text, Chinese and English.

A document splits at its headings; each section is packed paragraph by paragraph up to
``max_chars``; a paragraph longer than that splits at sentence ends (. ! ? 。！？). Every chunk keeps
its heading path, so a chunk read alone still says what it is about. Keys are stable:
``docId#chunk-n`` in document order.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
_SLUG = re.compile(r"[^a-z0-9\u4e00-\u9fff]+")


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    index: int
    title: str
    heading: str
    text: str
    domain: str
    source: str

    @property
    def key(self) -> str:
        return f"{self.doc_id}#chunk-{self.index}"

    @property
    def embed_text(self) -> str:
        """What is embedded and indexed: the heading path gives the chunk its context."""
        head = f"{self.title} > {self.heading}" if self.heading and self.heading != self.title else self.title
        return f"{head}\n{self.text}"


def slug(text: str) -> str:
    """Lower case, runs of other characters as one hyphen: a document's id, and a name that would be one."""
    return _SLUG.sub("-", text.lower()).strip("-")


def doc_id_for(path: Path) -> str:
    return slug(path.stem) or hashlib.sha1(str(path).encode()).hexdigest()[:12]


def _split_long(paragraph: str, max_chars: int) -> list[str]:
    if len(paragraph) <= max_chars:
        return [paragraph]
    out, buf = [], ""
    for sentence in (s for s in _SENTENCE.split(paragraph) if s):
        while len(sentence) > max_chars:  # a "sentence" with no end mark at all
            out.append(sentence[:max_chars])
            sentence = sentence[max_chars:]
        if buf and len(buf) + len(sentence) + 1 > max_chars:
            out.append(buf)
            buf = ""
        buf = f"{buf} {sentence}".strip() if buf and not _is_cjk(sentence) else buf + sentence
    if buf:
        out.append(buf)
    return out


def _is_cjk(text: str) -> bool:
    return bool(text) and "\u4e00" <= text[0] <= "\u9fff"


def parse_front_matter(text: str) -> tuple[dict[str, object], str]:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end > 0:
            meta = yaml.safe_load(text[4:end]) or {}
            if isinstance(meta, dict):
                return meta, text[end + 4 :].lstrip("\n")
    return {}, text


def chunk_document(
    doc_id: str, text: str, *, domain: str, source: str, title: str | None = None, max_chars: int = 700
) -> list[Chunk]:
    sections: list[tuple[list[str], list[str]]] = []  # (heading path, paragraphs)
    path: list[str] = []
    paragraphs: list[str] = []
    buf: list[str] = []
    in_code = False

    def end_paragraph() -> None:
        if buf:
            paragraphs.append("\n".join(buf).strip())
            buf.clear()

    def end_section() -> None:
        end_paragraph()
        if paragraphs:
            sections.append((list(path), list(paragraphs)))
            paragraphs.clear()

    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
        m = None if in_code else _HEADING.match(line)
        if m:
            end_section()
            level = len(m.group(1))
            del path[level - 1 :]
            path.extend([""] * (level - 1 - len(path)))
            path.append(m.group(2).strip())
        elif not line.strip() and not in_code:
            end_paragraph()
        else:
            buf.append(line)
    end_section()

    doc_title = title or next((p for s in sections for p in s[0] if p), doc_id)
    chunks: list[Chunk] = []
    for heads, paras in sections:
        heading = " > ".join(h for h in heads if h)
        pieces = [p for para in paras if para for p in _split_long(para, max_chars)]
        buf_text = ""
        for piece in pieces:
            if buf_text and len(buf_text) + len(piece) + 2 > max_chars:
                chunks.append(Chunk(doc_id, len(chunks), doc_title, heading, buf_text, domain, source))
                buf_text = ""
            buf_text = f"{buf_text}\n\n{piece}" if buf_text else piece
        if buf_text:
            chunks.append(Chunk(doc_id, len(chunks), doc_title, heading, buf_text, domain, source))
    return chunks


def chunk_file(
    path: Path,
    domain: str | None = None,
    max_chars: int = 700,
    text: str | None = None,
    source: str | None = None,
) -> list[Chunk]:
    """Chunk a .md/.txt file; front matter may give ``title``, ``domain`` (the argument wins) and ``url``
    (the page's public address, cited as its source). ``text``: the file as read through its markup
    (``rag/markup.py``); ``source``: the address to cite where the front matter has none."""
    meta, body = parse_front_matter(path.read_text(encoding="utf-8") if text is None else text)
    dom = domain or str(meta.get("domain") or path.parent.name or "general")
    title = str(meta["title"]) if meta.get("title") else None
    cited = str(meta.get("url") or source or path)
    return chunk_document(doc_id_for(path), body, domain=dom, source=cited, title=title, max_chars=max_chars)
