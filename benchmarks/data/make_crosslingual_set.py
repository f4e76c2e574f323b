"""Builds the cross-lingual retrieval set (benchmarks/data/crosslingual_queries.jsonl) mechanically:
Chinese questions whose answer is an English runbook, the case an SRE writing in Chinese about an
English-documented system meets every day.

The corpus is every English runbook in ../shared/data (prometheus-operator, OpenShift, GitLab.com,
kubernetes-mixin; about 800 documents), read at evaluation time by ``corpus()``; only the queries and
their judgements are frozen here. Three kinds of query:

- ``heldout``: the KubeSphere Chinese alert runbooks' meaning section (``## 含义``), looking for the
  English runbook of the same alert. Human translations, never used for tuning.
- ``tune`` / ``report`` halves (split by a hash of the query id) of
  - ``translated``: the ``## Meaning`` section of English alert runbooks that have no KubeSphere twin
    (prometheus-operator outside ``kubernetes/``, OpenShift alerts), translated into Chinese by the
    project's own embedded model (temperature 0), with the alert's name removed first so the query
    does not carry the runbook's title;
  - ``bundled``: the bundled Chinese runbooks that have an English twin among the bundled runbooks
    (same file name without ``-zh``), their first paragraph as the query.

A document is relevant when it is a runbook of the same alert (file name), so the OpenShift and
prometheus-operator runbooks of one alert both count. Frozen in its own commit before fusion is tuned.

    python benchmarks/data/make_crosslingual_set.py [--model qwen2.5-coder-1.5b-instruct]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
BUNDLED = ROOT / "knowledge" / "runbooks"
OUT = Path(__file__).with_name("crosslingual_queries.jsonl")
KUBESPHERE = DATA / "kubesphere-alert-runbooks-zh" / "content.zh" / "runbooks" / "kubernetes"
ENGLISH_GLOBS = (
    "prometheus-operator-runbooks/runbooks/**/*.md",
    "openshift-runbooks/alerts/**/*.md",
    "gitlab-com-runbooks/**/*.md",
    "kubernetes-mixin-runbook/*.md",
)
SKIP_NAMES = {"_index.md", "README.md", "SOURCE.md", "LICENSE.md", "example.md"}
MAX_QUERY_CHARS = 400
TRANSLATED = 120  # translations on two CPU cores take minutes each dozen: a hash-ordered sample


def corpus() -> dict[str, tuple[str, str]]:
    """Every English runbook of ../shared/data plus the bundled runbooks: doc id (its path) -> (title, text)."""
    docs: dict[str, tuple[str, str]] = {}
    for pattern in ENGLISH_GLOBS:
        for path in sorted(DATA.glob(pattern)):
            if path.name in SKIP_NAMES or not path.is_file():
                continue
            docs[str(path.relative_to(DATA))] = (path.stem, path.read_text(encoding="utf-8", errors="replace"))
    for path in sorted(BUNDLED.rglob("*.md")):
        docs[f"bundled/{path.relative_to(BUNDLED)}"] = (path.stem, path.read_text(encoding="utf-8"))
    return docs


def section(text: str, heading: str) -> str:
    """The body of ``## heading`` up to the next heading, as one paragraph."""
    m = re.search(rf"^##\s+{re.escape(heading)}\s*$(.*?)(?=^#|\Z)", text, re.M | re.S)
    return re.sub(r"\s+", " ", m.group(1)).strip() if m else ""


def relevant(alert: str, docs: dict[str, tuple[str, str]]) -> list[str]:
    """Runbooks of the same alert (file name), bundled ones excluded (they are not alert runbooks)."""
    return sorted(d for d in docs if not d.startswith("bundled/") and Path(d).stem == alert)


def split_of(qid: str) -> str:
    return "tune" if int(hashlib.sha256(qid.encode()).hexdigest(), 16) % 2 == 0 else "report"


def heldout(docs: dict[str, tuple[str, str]]) -> list[dict[str, object]]:
    out = []
    for path in sorted(KUBESPHERE.glob("*.md")):
        rel = relevant(path.stem, docs)
        query = section(path.read_text(encoding="utf-8"), "含义")[:MAX_QUERY_CHARS]
        if rel and query:
            out.append(
                {
                    "id": f"ks-{path.stem}",
                    "split": "heldout",
                    "source": "kubesphere-zh",
                    "query": query,
                    "relevant": rel,
                }
            )
    return out


def to_translate(docs: dict[str, tuple[str, str]], held: set[str]) -> list[tuple[str, str, list[str]]]:
    """(alert, English meaning without the alert's name, relevant docs) for alerts with no Chinese twin."""
    seen: set[str] = set()
    out = []
    for doc in sorted(docs):
        alert = Path(doc).stem
        tuning_source = (
            doc.startswith("prometheus-operator-runbooks/") and "/kubernetes/" not in doc
        ) or doc.startswith("openshift-runbooks/alerts/")
        if not tuning_source or alert in held or alert in seen:
            continue
        meaning = section(docs[doc][1], "Meaning")
        if len(meaning) < 40:
            continue
        meaning = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", meaning)  # links: their text only
        meaning = re.sub(rf"(the alert )?`?{re.escape(alert)}`?( alert)?", "this alert", meaning, flags=re.I)
        seen.add(alert)
        out.append((alert, meaning[:MAX_QUERY_CHARS], relevant(alert, docs)))
    out.sort(key=lambda item: hashlib.sha256(item[0].encode()).hexdigest())
    return sorted(out[:TRANSLATED])


TO_CHINESE = (
    "You translate operations documentation from English into Simplified Chinese.",
    "把下面这段英文翻译成简体中文，只输出译文：",
)


def translate(texts: list[str], model: str, prompt: tuple[str, str] = TO_CHINESE, max_tokens: int = 300) -> list[str]:
    """Each text translated by the model in var/models (temperature 0); ``prompt``: system message and
    the instruction put before the text."""
    from vllm import LLM, SamplingParams

    llm = LLM(model=str(ROOT / "var" / "models" / model), max_model_len=2048, enforce_eager=True, seed=0)
    system, instruction = prompt
    prompts = [
        [{"role": "system", "content": system}, {"role": "user", "content": f"{instruction}\n\n{t}"}] for t in texts
    ]
    outs = llm.chat(prompts, SamplingParams(temperature=0, max_tokens=max_tokens, repetition_penalty=1.05))
    return [re.sub(r"\s+", " ", o.outputs[0].text).strip() for o in outs]


def bundled_twins() -> list[dict[str, object]]:
    out = []
    for zh in sorted(BUNDLED.rglob("*-zh.md")):
        en = zh.with_name(zh.name.removesuffix("-zh.md") + ".md")
        if not en.exists():
            continue
        body = re.sub(r"^---.*?---", "", zh.read_text(encoding="utf-8"), flags=re.S)
        paras = [p for p in re.split(r"\n\s*\n", body) if p.strip() and not p.lstrip().startswith("#")]
        qid = f"bundled-{zh.stem}"
        query = re.sub(r"\s+", " ", paras[0]).strip()[:MAX_QUERY_CHARS]
        rel = [f"bundled/{en.relative_to(BUNDLED)}"]
        out.append({"id": qid, "split": split_of(qid), "source": "bundled-twin", "query": query, "relevant": rel})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    args = parser.parse_args()
    docs = corpus()
    held = heldout(docs)
    items = to_translate(docs, {str(h["id"]).removeprefix("ks-") for h in held})
    zh = translate([m for _, m, _ in items], args.model)
    rows = list(held)
    for (alert, _, rel), query in zip(items, zh, strict=True):
        qid = f"tr-{alert}"
        if query and re.search(r"[\u4e00-\u9fff]", query):  # a model answer with no Chinese is no query
            rows.append(
                {
                    "id": qid,
                    "split": split_of(qid),
                    "source": f"translated:{args.model}",
                    "query": query,
                    "relevant": rel,
                }
            )
    rows += bundled_twins()
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r["split"])] = counts.get(str(r["split"]), 0) + 1
    print(f"wrote {OUT}: {len(docs)} documents, {counts}")


if __name__ == "__main__":
    main()
