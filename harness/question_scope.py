"""Which of the run's telemetry the question is about (DESIGN.md §8, "No root cause the evidence is not about").

The service's telemetry backends hold whatever they hold (on one machine: the bundled demo incident in
payment-service). A question about Redis latency or another service's memory kills is not answered by
payment-service's connection pool, however loud its anomaly: that is how every answer came to blame the
demo service. So a service's telemetry is evidence for a question only when

- the question names the service (``payment-service``, ``payment service``), or a service that calls it
  or that it calls (the dependency edges the tools returned), or
- the question names what the service runs, as its telemetry names it: a metric namespace
  (``hikaricp``_connections_active, ``mysql``_slow_queries) or an identifier in its logs
  (HikariPool-1, SQLTransientConnectionException); generic namespaces (http, process, jvm) and plain
  words of log messages do not count: every service has them, or

- the run's telemetry was chosen for this question by the service itself (the RCA evaluation's replay
  of one labelled fault): then all of it is.

Chinese questions are matched through their CC-CEDICT gloss (支付服务 -> "payment service"). What the
question names that no telemetry holds ("redis", "kafka", a service the backends never saw) is reported,
so the answer can say plainly what it could not look at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from harness.tools.base import LedgerEntry

# The tools whose evidence is about named components: telemetry, and the cluster (harness/tools/kubernetes.py).
TELEMETRY_TOOLS = {"rank_anomalies", "query_metrics", "query_logs", "service_dependencies", "query_traces"}
_KEY = re.compile(r"^(?:anomaly|metric|logtpl|trace|span|edge|k8s):([^:]+):")
_EDGE = re.compile(r"^dep:(.+?)->(.+)$")
_WORD = re.compile(r"[a-z][a-z0-9]+")
_IDENT = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")  # order-service, product-catalog, node-7
_CJK = re.compile(r"[\u4e00-\u9fff]")
_METRIC = re.compile(r"\b([a-z][a-z0-9]*)_[a-z0-9_]+\b")  # hikaricp_connections_active -> hikaricp
# Mixed-case identifiers (HikariPool, SQLTransientConnectionException), without a trailing -1 or digits.
_IDENTIFIER = re.compile(r"\b([A-Za-z]*[a-z][A-Z][A-Za-z]*|[A-Z]{2,}[a-z][A-Za-z]*)")

# Words any service's telemetry (or any incident question) holds: they tie a question to no service.
GENERIC = set(
    """
    service services server servers http https grpc request requests response responses second seconds ms
    max min total count sum avg rate ratio bytes error errors fail failed failure failures latency latencies
    duration time timeout timeouts timed slow high low cpu memory mem heap disk network io usage used
    utilization usable available pod pods container containers node nodes instance instance job app application
    api status code info warn warning debug trace log logs metric metrics the and for with from this that
    since after before when what why how root cause causes diagnosis check about users user see seeing
    minutes minute hour hours ago now get post put delete java jvm gc pause pauses thread threads process
    system systems cluster value values peak baseline spread deviation window its above below more less
    go golang python node_exporter kube kubernetes container_cpu
    """.split()
)
# Hyphenated words that are phrases, not component names (out-of-memory, read-only, non-zero).
PHRASE_WORDS = set(
    "of in on to up out by per read write only non re pre multi real long short high low level version based side "
    "wide time term party".split()
)
# Components and technologies a question can name (for the plain "no telemetry for X" sentence).
TECHNOLOGIES = set(
    """
    redis kafka mysql mariadb postgres postgresql mongodb mongo etcd zookeeper elasticsearch opensearch
    rabbitmq nginx haproxy envoy istio coredns dns kubelet apiserver scheduler prometheus alertmanager
    grafana loki jaeger tidb tikv pd cassandra memcached consul vault ceph minio s3 nfs kube-proxy
    ingress clickhouse hbase hdfs spark flink jenkins gitlab patroni pgbouncer hikaricp
    rds aurora dynamodb bigquery cloudsql spanner cosmosdb gcs sqs sns kinesis pubsub elasticache memorystore
    """.split()
)


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "is", "us")) else word


def _words(text: str) -> set[str]:
    return {_singular(w) for w in _WORD.findall(text.lower())}


def _collapsed(text: str) -> str:
    return re.sub(r"[\s_\-.]+", "", text.lower())


def _name_words(service: str) -> set[str]:
    return _words(service.replace("-", " ").replace("_", " "))


@dataclass(frozen=True)
class QuestionScope:
    """``services``: the telemetry services the question is about (``None``: all of them). ``absent``:
    what the question names that no telemetry holds."""

    services: frozenset[str] | None
    absent: tuple[str, ...] = ()
    cluster_asked: bool = False  # the cluster tools were called (and found nothing about what is absent)

    def covers(self, service: str) -> bool:
        return self.services is None or service in self.services

    def covers_key(self, key: str) -> bool:
        """An evidence key the answer may cite: a runbook block, or telemetry of a service in scope (a
        call edge when either end is)."""
        edge = _EDGE.match(key)
        if edge:
            return self.covers(edge.group(1)) or self.covers(edge.group(2))
        service = service_of_key(key)
        return service is None or self.covers(service)

    @property
    def has_telemetry(self) -> bool:
        return self.services is None or bool(self.services)


def service_of_key(key: str) -> str | None:
    """The service an evidence key is about (``metric:payment-service:…`` -> payment-service)."""
    m = _KEY.match(key)
    return m.group(1) if m else None


def _telemetry(ledger: dict[str, LedgerEntry]) -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    """Each service the telemetry tools returned -> the words of its evidence; and the call edges."""
    vocab, edges, _ = _evidence_about(ledger)
    return vocab, edges


def _evidence_about(
    ledger: dict[str, LedgerEntry],
) -> tuple[dict[str, set[str]], list[tuple[str, str]], dict[str, set[str]]]:
    """``_telemetry``'s two, and each component the cluster tools found -> the namespaces it is in."""
    vocab: dict[str, set[str]] = {}
    edges: list[tuple[str, str]] = []
    namespaces: dict[str, set[str]] = {}
    for entry in ledger.values():
        if entry.result.status not in ("success", "no_data"):
            continue
        if entry.tool_name not in TELEMETRY_TOOLS and not entry.result.output.get("findings"):
            continue
        output = entry.result.output
        for item in output.get("ranking") or []:
            if isinstance(item, dict) and item.get("service"):
                vocab.setdefault(str(item["service"]), set())
        if isinstance(output.get("service"), str) and output["service"]:
            vocab.setdefault(output["service"], set())
        for block in output.get("evidence") or []:
            if not isinstance(block, dict):
                continue
            key, text = str(block.get("key") or ""), str(block.get("text") or "")
            edge = _EDGE.match(key)
            if edge:
                edges.append((edge.group(1), edge.group(2)))
                continue
            service = service_of_key(key)
            if service:
                vocab.setdefault(service, set()).update(signal_names(text) - _name_words(service))
                if block.get("namespace"):
                    namespaces.setdefault(service, set()).add(str(block["namespace"]))
    return vocab, edges, namespaces


def signal_names(text: str) -> set[str]:
    """The words of an evidence line that name what a service runs, not what any service does: a metric
    name's namespace (``hikaricp``_connections_active, ``mysql``_slow_queries; by Prometheus convention the
    exporter or library) and identifiers in log lines (HikariPool-1, SQLTransientConnectionException).
    Plain words of a log message ("orders", "update", "slow") name nothing: a question about a
    shop's orders is not about the service whose log mentions an orders table."""
    names = {m.group(1).lower() for m in _METRIC.finditer(text)}
    names |= {w.lower() for w in _IDENTIFIER.findall(text)}
    return {n for n in names if n not in GENERIC and len(n) >= 3}


# Common service and signal words of Chinese incident reports, in the English that service names and
# metric names use (CC-CEDICT's first senses miss them: 支付服务 -> "pay serve", 连接池 -> "link").
SRE_GLOSSARY = {
    "支付": "payment",
    "订单": "order",
    "库存": "inventory",
    "购物车": "cart",
    "结账": "checkout",
    "结算": "checkout",
    "商品目录": "product catalog",
    "推荐": "recommendation",
    "广告": "ad",
    "邮件": "email",
    "运费": "shipping",
    "物流": "shipping",
    "货币": "currency",
    "前端": "frontend",
    "网关": "gateway",
    "认证": "auth",
    "用户": "user",
    "服务": "service",
    "连接池": "connection pool",
    "连接": "connection",
    "数据库": "database",
    "慢查询": "slow query",
    "缓存": "cache",
    "消息队列": "queue",
    "线程池": "thread pool",
}


def _question_text(question: str) -> str:
    if not _CJK.search(question):
        return question
    from rag.gloss import gloss  # the dictionary loads once per process (about a second)

    # The glossary's words joined the way the question joins them (支付服务 -> "payment service").
    joined = question
    for word in sorted(SRE_GLOSSARY, key=len, reverse=True):
        joined = joined.replace(word, f" {SRE_GLOSSARY[word]} ")
    return f"{question} {' '.join(joined.split())} {gloss(question)}"


# "frontend pods", "the billing service", "checkout 服务": the word before what a component is called.
_BEFORE_KIND = re.compile(
    r"\b([A-Za-z][\w.-]{2,})\s*(?:pods?|services?|servers?|deployments?|clusters?|instances?|replicas?|"
    r"containers?|brokers?|consumers?|workers?|服务|集群|节点|实例)\b",
    re.IGNORECASE,
)
# Alert and component names written in camel case: KubePodNotReady, etcdGRPCRequestsSlow.
_CAMEL = re.compile(r"\b(?:[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*){2,}|[a-z]{3,}[A-Z][A-Za-z0-9]{3,})\b")
_NOT_NAMES = set(
    "the our a an all every new old some these those its their my your this that which each any other".split()
)


def _named_things(question: str) -> list[str]:
    """What the question names as the thing in trouble, as written (for the sentence that says what the
    connected telemetry holds nothing about)."""
    found = [m.group(1) for m in _BEFORE_KIND.finditer(question)] + _CAMEL.findall(question)
    names = [n.strip("-.") for n in found]
    return [n for n in dict.fromkeys(names) if len(n) >= 3 and n.lower() not in _NOT_NAMES | GENERIC | PHRASE_WORDS]


def _neighbours(services: Iterable[str], edges: list[tuple[str, str]]) -> set[str]:
    named = set(services)
    return named | {b for a, b in edges if a in named} | {a for a, b in edges if b in named}


# A value after a secret-named key, and well-known token shapes: never a component name to repeat back
# ("db password=hunter2-x" must not come back as "no metrics or logs for hunter2-x").
_SECRETS = re.compile(
    r"(?i)\b[\w.\-]*(?:password|passwd|pwd|token|secret|api[_\-]?key|apikey|authorization|credential)[\w.\-]*"
    r"\s*[=:]\s*(?:\"[^\"]*\"|'[^']*'|[^\s,;&\"']+)|\b(?:sk|rk|pk)-[A-Za-z0-9_\-]{16,}\b|\bAKIA[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}\b|\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}"
)


def question_scope(question: str, ledger: dict[str, LedgerEntry], whole: bool = False) -> QuestionScope:
    question = _SECRETS.sub(" ", question)
    vocab, edges, namespaces = _evidence_about(ledger)
    seen = tuple(sorted(vocab))
    if whole:
        return QuestionScope(None)
    text = _question_text(question)
    collapsed = _collapsed(text)
    named = [s for s in seen if len(_collapsed(s)) >= 3 and _collapsed(s) in collapsed]
    # A cluster component in a namespace the question names ("the app in the minishop namespace").
    asked = {w for w in re.findall(r"[a-z0-9][a-z0-9-]+", text.lower())}
    named += [s for s in seen if s not in named and namespaces.get(s, set()) & asked - {"default"}]
    words = _words(text)
    distinctive = {w for w in words if len(w) >= 3 and w not in GENERIC and not w.isdigit()}
    held = set().union(*vocab.values()) if vocab else set()
    absent = [
        t
        for t in dict.fromkeys(_IDENT.findall(text.lower()))
        if not set(t.split("-")) & PHRASE_WORDS
        and not any(_collapsed(t) in _collapsed(s) for s in seen)
        and t.split("-")[0] not in held  # HikariPool-1: a name the telemetry's own logs use
    ]
    absent += [w for w in sorted(distinctive & TECHNOLOGIES) if w not in held and not any(w in s for s in seen)]
    absent += [
        n
        for n in _named_things(question)
        if n.lower() not in held
        and not any(_collapsed(n) in _collapsed(s) or _collapsed(s) in _collapsed(n) for s in seen)
    ]
    absent = [a.strip("-.") for a in absent if len(a.strip("-.")) >= 2]
    absent = list({a.lower(): a for a in reversed(absent)}.values())[::-1]  # one spelling each, first kept
    absent = [a for a in absent if not any(a.lower() in b.lower() and a != b for b in absent)]
    cluster = any(
        e.result.output.get("findings") is not None or e.tool_name.startswith("kubectl_") for e in ledger.values()
    )
    if named:
        services = _neighbours(named, edges)
        return QuestionScope(frozenset(services), tuple(absent), cluster)
    # A namespace match counts only when the question names no other component: "tidb-server … Lost
    # connection to MySQL server" is about TiDB, not about every service with a mysql_ metric.
    matched = {s for s, v in vocab.items() if v & distinctive} if not absent else set()
    return QuestionScope(frozenset(matched), tuple(absent), cluster)


NO_TELEMETRY = {
    "en": "No metrics or logs for {what} in the connected backends; the answer rests on runbook guidance only.",
    "zh": "已连接的监控与日志后端中没有 {what} 的指标或日志；以下回答仅依据运维手册的指导。",
}
NOTHING_IN_CLUSTER = {
    "en": "The cluster tools found nothing about {what} (no such resource, or no call answered), and the connected "
    "metrics and logs hold nothing about it; the answer rests on runbook guidance only.",
    "zh": "集群工具没有找到 {what} 的任何信息（没有该资源，或调用没有返回结果），已连接的指标与日志中也没有；"
    "以下回答仅依据运维手册的指导。",
}
NOTHING_NAMED = {
    "en": "The connected metrics and logs hold nothing about what the question asks; the answer rests on runbook "
    "guidance only.",
    "zh": "已连接的指标与日志中没有与该问题相关的数据；以下回答仅依据运维手册的指导。",
}


def limitation(scope: QuestionScope, lang: str) -> str | None:
    """One plain sentence when the question's components have no telemetry here, else None."""
    if scope.has_telemetry:
        return None
    lang = "zh" if lang == "zh" else "en"
    if scope.absent:
        template = NOTHING_IN_CLUSTER if scope.cluster_asked else NO_TELEMETRY
        return template[lang].format(what=", ".join(scope.absent[:3]))
    return NOTHING_NAMED[lang]
