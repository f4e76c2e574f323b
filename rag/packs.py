"""Knowledge packs: the public operations documentation of one system, with where it came from.

A pack is a folder ``knowledge/packs/<name>/`` with a ``pack.yaml`` (its systems, source repository,
commit and license), a ``SOURCE.md`` and the upstream ``LICENSE``. Its documents are either beside it
(``docs/``, Markdown converted from the upstream's format) or, for the public corpora the workplace
already holds byte for byte, under the shared data folder (``data:``), read through their markup
(``rag/markup.py``) at ingest. ``raydiag ingest --packs default`` is what ``make run`` and every
benchmark's knowledge base ingest, so the knowledge base users get is the one that is measured.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rag.markup import MARKUPS

ROOT = Path(__file__).resolve().parents[1]
PACKS_DIR = Path(os.environ.get("RAYDIAG_PACKS_DIR", str(ROOT / "knowledge" / "packs")))
# Where the workplace's public corpora live (``data:`` of a pack); RAYDIAG_SHARED_DATA moves it.
SHARED_DATA = Path(os.environ.get("RAYDIAG_SHARED_DATA", str(ROOT.parent / "shared" / "data")))
SKIPPED_NAMES = frozenset({"SOURCE.md", "LICENSE.md", "README.md", "_index.md", "example.md"})


@dataclass(frozen=True)
class Pack:
    name: str
    title: str
    systems: tuple[str, ...]  # the names a question uses for what the pack documents (lower case)
    langs: tuple[str, ...]
    repository: str
    commit: str
    license: str
    default: bool
    root: Path  # the folder its documents are read from
    include: tuple[str, ...] = ("**/*.md",)
    exclude: tuple[str, ...] = ()  # path prefixes under root left out
    markup: str = "markdown"
    # The domain its chunks are filed under: the pack's name, or None where each document's front
    # matter says (the bundled runbooks: the domains a caller may ask a lookup to keep to).
    domain: str | None = None
    # Path prefix under root -> the public URL of that folder (a page's URL: the prefix replaced).
    urls: dict[str, str] = field(default_factory=dict)

    @property
    def available(self) -> bool:
        return self.root.is_dir()

    def documents(self) -> list[Path]:
        found = {p for pattern in self.include for p in self.root.glob(pattern) if p.is_file()}
        return sorted(
            p
            for p in found
            if p.name not in SKIPPED_NAMES
            and not p.name.startswith(".")
            and not any(p.relative_to(self.root).as_posix().startswith(e) for e in self.exclude)
        )

    def text(self, path: Path) -> str:
        return MARKUPS[self.markup](path.read_text(encoding="utf-8"))

    def digest(self, settings: str) -> str:
        """What the pack's chunks are made of: every document's path and text as read, and ``settings``
        (the chunk size and the embedder). The same digest in a collection's manifest: nothing to redo."""
        h = hashlib.sha256(f"{self.name}\0{self.domain}\0{self.markup}\0{settings}".encode())
        for path in self.documents():
            h.update(f"\0{path.relative_to(self.root).as_posix()}\0{self.url(path)}\0".encode())
            h.update(path.read_bytes())
        return h.hexdigest()

    def url(self, path: Path) -> str:
        """The page's public address, to cite; the file's path where the pack names none."""
        rel = path.relative_to(self.root).as_posix()
        for prefix in sorted(self.urls, key=len, reverse=True):
            if rel.startswith(prefix):
                tail = rel[len(prefix) :]
                if self.markup == "hugo":  # a Hugo site serves content/en/docs/a/b.md at /docs/a/b/
                    tail = tail.removesuffix(".md") + "/"
                return self.urls[prefix] + tail
        return str(path)


def _root(folder: Path, meta: dict[str, object], data_root: Path) -> Path:
    """``data:`` a folder of the shared data; ``path:`` a folder of this repository; else ``docs/``."""
    if meta.get("data"):
        return data_root / str(meta["data"])
    if meta.get("path"):
        return ROOT / str(meta["path"])
    return folder / "docs"


def _pack(folder: Path, data_root: Path) -> Pack:
    meta = yaml.safe_load((folder / "pack.yaml").read_text(encoding="utf-8")) or {}
    langs = meta.get("lang", ["en"])
    return Pack(
        name=str(meta.get("name") or folder.name),
        title=str(meta.get("title", folder.name)),
        systems=tuple(str(s).lower() for s in meta.get("systems", [])),
        langs=tuple([langs] if isinstance(langs, str) else langs),
        repository=str(meta.get("repository", "")),
        commit=str(meta.get("commit", "")),
        license=str(meta.get("license", "")),
        default=bool(meta.get("default", True)),
        root=_root(folder, meta, data_root),
        include=tuple(meta.get("include", ["**/*.md"])),
        exclude=tuple(meta.get("exclude", [])),
        markup=str(meta.get("markup", "markdown")),
        domain=meta.get("domain", str(meta.get("name") or folder.name)),
        urls={str(k): str(v) for k, v in (meta.get("urls") or {}).items()},
    )


def load_packs(packs_dir: Path = PACKS_DIR, data_root: Path = SHARED_DATA) -> dict[str, Pack]:
    return {
        p.name: p for p in (_pack(f, data_root) for f in sorted(packs_dir.iterdir()) if (f / "pack.yaml").is_file())
    }


def select_packs(names: Iterable[str], packs: dict[str, Pack]) -> list[Pack]:
    """``default`` and ``all`` name sets; any other name one pack. An unknown name is an error."""
    chosen: dict[str, Pack] = {}
    for name in names:
        if name in ("default", "all"):
            chosen.update({n: p for n, p in packs.items() if name == "all" or p.default})
        elif name in packs:
            chosen[name] = packs[name]
        else:
            raise KeyError(f"no knowledge pack {name!r} (known: {', '.join(sorted(packs))})")
    return list(chosen.values())


# -- which packs a collection holds (for /healthz) ------------------------------------------------------


def manifest_path(milvus_uri: str, collection: str) -> Path:
    """Beside an embedded Milvus Lite file; under var/ for a Milvus server."""
    if "://" in milvus_uri:
        return ROOT / "var" / f"knowledge-{collection}.packs.json"
    return Path(f"{milvus_uri}.{collection}.packs.json")


def record_loaded(milvus_uri: str, collection: str, loaded: dict[str, dict[str, object]]) -> None:
    path = manifest_path(milvus_uri, collection)
    previous = loaded_packs(milvus_uri, collection)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**previous, **loaded}, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def loaded_packs(milvus_uri: str, collection: str) -> dict[str, dict[str, object]]:
    path = manifest_path(milvus_uri, collection)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
