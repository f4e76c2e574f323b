"""Site markup read as the Markdown a chunker understands.

The Kubernetes documentation is Hugo source: shortcodes (``{{< glossary_tooltip text="node" … >}}``,
paired admonitions ``{{< note >}}…{{< /note >}}``), section markers and, in the Chinese pages, the
English original kept inside HTML comments beside each translated paragraph. Chunked as it is, a
Chinese chunk is half English and a sentence reads ``{{< glossary_tooltip text="Pod" term_id="pod" >}}
is Pending``. ``hugo_text`` keeps the words a reader of the site sees and drops the machinery.
"""

from __future__ import annotations

import re

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# Blocks whose content is not text a reader sees (a diagram's source, an editor's hidden comment).
_DROPPED_BLOCK = re.compile(r"\{\{[<%]\s*(mermaid|comment)\b.*?[>%]\}\}.*?\{\{[<%]\s*/\1\s*[>%]\}\}", re.DOTALL)
_SHORTCODE = re.compile(r"\{\{[<%]\s*(/?)\s*([\w-]+)([^}]*?)[>%]\}\}", re.DOTALL)
_ARG = re.compile(r'(\w+)="([^"]*)"')
_HEADINGS = {"prerequisites": "Before you begin", "whatsnext": "What's next", "cleanup": "Cleaning up"}
_HEADING_ANCHOR = re.compile(r"^(#{1,6}\s.*?)\s*\{#[^}]*\}\s*$", re.MULTILINE)
_BLANK_RUN = re.compile(r"\n{3,}")


def _shortcode(match: re.Match[str]) -> str:
    closing, name, rest = match.group(1), match.group(2), match.group(3)
    if closing:
        return ""
    args = dict(_ARG.findall(rest))
    if name in ("glossary_tooltip", "api-reference", "link"):
        return args.get("text") or args.get("term_id", "")
    if name == "heading":
        first = rest.strip().strip('"')
        return _HEADINGS.get(first, first)
    if name == "figure":
        return args.get("caption") or args.get("alt", "")
    if name in ("note", "caution", "warning"):
        return f"{name.capitalize()}: "
    return ""  # feature-state, code_sample, include, skew, param, tabs, …: site machinery


def hugo_text(text: str) -> str:
    text = _COMMENT.sub("", text)
    text = _DROPPED_BLOCK.sub("", text)
    text = _SHORTCODE.sub(_shortcode, text)
    text = _HEADING_ANCHOR.sub(r"\1", text)
    return _BLANK_RUN.sub("\n\n", text)


MARKUPS = {"markdown": lambda text: text, "hugo": hugo_text}
