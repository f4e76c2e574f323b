"""Builds the labelled routing set (benchmarks/data/routing_set.jsonl) mechanically, from sources other
than the router's exemplars: incident texts from ../shared/data → DIAGNOSIS (Prometheus alert rules,
ITBench fault alerts, KubeSphere Chinese alert runbooks' meaning lines, OpsEval log-analysis questions
that hand over a log line); greetings, questions about raydiag and off-topic requests, written for
this set → CHITCHAT / OTHER. Deterministic (seeded); the set is frozen in its own commit before the
router is tuned against it.

    python benchmarks/data/make_routing_set.py
"""

from __future__ import annotations

import glob
import json
import random
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
OUT = Path(__file__).with_name("routing_set.jsonl")

CHAT = [
    ("hi", "en"),
    ("hello!", "en"),
    ("hey there", "en"),
    ("good morning", "en"),
    ("thanks a lot", "en"),
    ("thank you, that was useful", "en"),
    ("who are you?", "en"),
    ("what can you do?", "en"),
    ("how are you doing today?", "en"),
    ("can you introduce yourself?", "en"),
    ("what's your name?", "en"),
    ("are you a bot?", "en"),
    ("bye for now", "en"),
    ("good evening, nice to meet you", "en"),
    ("ok, got it, thanks", "en"),
    ("你好", "zh"),
    ("您好！", "zh"),
    ("早上好", "zh"),
    ("谢谢你", "zh"),
    ("非常感谢你的帮助", "zh"),
    ("你是谁？", "zh"),
    ("你能做什么？", "zh"),
    ("你可以帮我做什么", "zh"),
    ("介绍一下你自己", "zh"),
    ("你叫什么名字", "zh"),
    ("你是机器人吗？", "zh"),
    ("再见", "zh"),
    ("晚上好，很高兴认识你", "zh"),
    ("好的，明白了，谢谢", "zh"),
    ("嗨", "zh"),
]
OTHER = [
    ("what is the capital of Australia?", "en"),
    ("write a haiku about the sea", "en"),
    ("recommend a science fiction novel", "en"),
    ("how do I make a good espresso?", "en"),
    ("translate 'good luck' into French", "en"),
    ("who won the football world cup in 2010?", "en"),
    ("give me a recipe for pancakes", "en"),
    ("what is 17 times 23?", "en"),
    ("suggest a name for my cat", "en"),
    ("plan a weekend trip to the mountains", "en"),
    ("法国的首都是哪里？", "zh"),
    ("写一首关于春天的诗", "zh"),
    ("推荐一本科幻小说", "zh"),
    ("怎么做红烧肉？", "zh"),
    ("明天适合去爬山吗", "zh"),
    ("帮我给猫起个名字", "zh"),
    ("2010 年世界杯冠军是谁？", "zh"),
    ("十七乘以二十三等于多少", "zh"),
    ("讲一个笑话", "zh"),
    ("周末去哪里旅游比较好", "zh"),
]


def prometheus_rules(rng: random.Random, n: int) -> list[dict[str, str]]:
    data = yaml.safe_load((DATA / "awesome-prometheus-alerts" / "rules.yml").read_text(encoding="utf-8"))
    rules = []
    for group in data["groups"]:
        for service in group.get("services") or []:
            for exporter in service.get("exporters") or []:
                for rule in exporter.get("rules") or []:
                    desc = str(rule.get("description", "")).strip()
                    if desc and "{{" not in desc and len(desc) > 25:
                        rules.append((str(rule["name"]), desc))
    picked = rng.sample(rules, n)
    forms = [
        "Alert '{n}' is firing: {d}",
        "{d} What is going on?",
        "We got paged for {n}. {d} How do I find the cause?",
    ]
    return [
        {
            "question": rng.choice(forms).format(n=a, d=d),
            "intent": "DIAGNOSIS",
            "lang": "en",
            "source": "awesome-prometheus-alerts",
        }
        for a, d in picked
    ]


def itbench(rng: random.Random, n: int) -> list[dict[str, str]]:
    alerts = set()
    for path in glob.glob(
        str(DATA / "itbench-sre-scenarios" / "scenarios" / "sre" / "library" / "indexes" / "faults" / "*.json")
    ):
        for names in (json.loads(Path(path).read_text(encoding="utf-8")).get("alerts") or {}).values():
            alerts.update(names)
    forms = [
        "{a} fired for the checkout workload in namespace otel-demo ten minutes ago",
        "Our {a} alert keeps firing since the last deploy, please investigate",
        "{a} alert on the frontend service, what should I check first?",
    ]
    return [
        {
            "question": rng.choice(forms).format(a=a),
            "intent": "DIAGNOSIS",
            "lang": "en",
            "source": "itbench-sre-scenarios",
        }
        for a in rng.sample(sorted(alerts), min(n, len(alerts)))
    ]


def kubesphere(rng: random.Random, n: int) -> list[dict[str, str]]:
    out = []
    for path in sorted(
        glob.glob(str(DATA / "kubesphere-alert-runbooks-zh" / "content.zh" / "runbooks" / "*" / "*.md"))
    ):
        text = Path(path).read_text(encoding="utf-8")
        m = re.search(r"## 含义\s+(.+?)\n", text)
        if m and "_index" not in path:
            out.append((Path(path).stem, m.group(1).strip()))
    forms = ["告警 {n} 触发了：{d}怎么处理？", "{d}这是什么原因？", "收到 {n} 告警，{d}请帮忙排查"]
    return [
        {
            "question": rng.choice(forms).format(n=a, d=d),
            "intent": "DIAGNOSIS",
            "lang": "zh",
            "source": "kubesphere-alert-runbooks-zh",
        }
        for a, d in rng.sample(out, min(n, len(out)))
    ]


def opseval_logs(rng: random.Random, n: int) -> list[dict[str, str]]:
    items = json.loads((DATA / "opseval-zh-ops-qa" / "test" / "Log_Analysis.json").read_text(encoding="utf-8"))
    handed = [
        i["question"].strip()
        for i in items
        if re.search(r"\d{2}:\d{2}:\d{2}", i["question"]) and "日志" in i["question"]
    ]
    return [
        {"question": q, "intent": "DIAGNOSIS", "lang": "zh", "source": "opseval-zh-ops-qa"}
        for q in rng.sample(handed, min(n, len(handed)))
    ]


def main() -> None:
    rng = random.Random(20261203)
    rows = prometheus_rules(rng, 60) + itbench(rng, 12) + kubesphere(rng, 25) + opseval_logs(rng, 30)
    rows += [{"question": q, "intent": "CHITCHAT", "lang": lang, "source": "written"} for q, lang in CHAT]
    rows += [{"question": q, "intent": "OTHER", "lang": lang, "source": "written"} for q, lang in OTHER]
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["intent"]] = counts.get(r["intent"], 0) + 1
    print(f"wrote {len(rows)} questions to {OUT}: {counts}")


if __name__ == "__main__":
    main()
