"""Deterministic intent routing: incident vocabulary and greeting patterns first, then the question's
similarity to bilingual exemplars of each intent (through the same embedder the lookup uses); the
router model is asked only when neither decides (DESIGN.md §2).

A question with incident vocabulary is a diagnosis even when it also greets ("hi, checkout returns
502"); a greeting or a question about raydiag without any is chat.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import numpy as np

Embed = Callable[[list[str]], Awaitable[np.ndarray]]

_INCIDENT = re.compile(
    r"\b(errors?|exceptions?|fail(?:s|ed|ing|ures?)?|time[sd]? ?out|timeouts?|latency|slow(?:er|ness|ly)?|p9[059]|"
    r"[45]\d\d|5xx|4xx|oom|out of memory|crash\w*|restart\w*|outage|down|unavailable|unreachable|alerts?|"
    r"firing|incident|root[ -]?cause|diagnos\w*|troubleshoot\w*|cpu|memory|disk|throttl\w*|saturat\w*|spik\w*|"
    r"lag|backlog|leak\w*|deadlock\w*|pool|exhaust\w*|refused|packet loss|degrad\w*|hang\w*|stuck|"
    r"not responding|unhealthy|evict\w*|backoff|panic\w*|stack ?trace|traceback|503|502|504|500|"
    r"high load|load average|queue|retries|retry|jitter|throughput drop|error rate|sla|slo|pagerduty|"
    r"kafka|mysql|redis|postgres|nginx|kubernetes|k8s|pods?|node ?not ?ready|certificate|expired|dns)\b"
    r"|故障|报错|错误|异常|超时|延迟|变慢|很慢|卡顿|卡住|告警|报警|宕机|挂了|崩溃|重启|失败|不可用|根因|排查|飙|打满|"
    r"耗尽|积压|泄漏|死锁|丢包|抖动|内存|磁盘|负载|堆积|无法连接|拒绝连接|连接池|慢查询|不通|无响应|掉线|降级|熔断|限流|满了",
    re.I,
)
_CHAT = re.compile(
    r"^\s*(hi|hello|hey|howdy|good (morning|afternoon|evening)|thanks?( you)?|thank you|bye|goodbye)\b"
    r"|\b(who are you|what are you|what can you do|what do you do|how are you|introduce yourself|your name|"
    r"are you (a bot|an ai|human)|help me understand what you)\b"
    r"|^\s*(你好|您好|嗨|哈喽|早上好|下午好|晚上好|谢谢|多谢|感谢|再见|拜拜)"
    r"|你是谁|你能做什么|你可以做什么|你会什么|介绍一下你|你叫什么|你是机器人吗",
    re.I,
)

EXEMPLARS: dict[str, list[str]] = {
    "DIAGNOSIS": [
        "payment-service requests time out and the connection pool is exhausted, what is the root cause?",
        "p99 latency of the checkout API jumped from 80 ms to 2 s",
        "pods keep restarting with CrashLoopBackOff after the deploy",
        "the Kafka consumer lag keeps growing on the orders topic",
        "disk usage on node-3 reached 95%, why?",
        "users see 502 errors from the gateway since 10:05",
        "订单服务 p99 延迟飙到 2 秒，日志里大量超时，根因是什么？",
        "数据库连接池耗尽，请求一直失败，怎么排查？",
        "告警：某节点 CPU 使用率持续 95% 以上",
        "支付接口大量报错 500，帮我定位原因",
    ],
    "CHITCHAT": [
        "hello there",
        "thanks, that helped",
        "who are you and what can you do?",
        "how are you today?",
        "你好",
        "谢谢你的帮助",
        "你是谁？能帮我做什么？",
        "早上好",
    ],
    "OTHER": [
        "what is the capital of France?",
        "write me a poem about autumn",
        "recommend a good movie for tonight",
        "how do I cook rice?",
        "what's the weather like tomorrow?",
        "法国的首都是哪里？",
        "给我写一首关于秋天的诗",
        "推荐一部好看的电影",
        "今天天气怎么样？",
    ],
}
MARGIN = 0.05


@dataclass
class RuleDecision:
    intent: str
    how: str  # keywords | greeting | exemplars
    detail: str


def by_rules(question: str) -> RuleDecision | None:
    incident = _INCIDENT.search(question)
    if incident:
        return RuleDecision("DIAGNOSIS", "keywords", f"incident vocabulary: {incident.group(0)!r}")
    chat = _CHAT.search(question)
    if chat:
        return RuleDecision("CHITCHAT", "greeting", f"greeting or a question about raydiag: {chat.group(0).strip()!r}")
    return None


class ExemplarRouter:
    """Nearest intent by cosine similarity to the exemplars; a close call (within ``MARGIN``) is left to
    the router model only when it leans to DIAGNOSIS."""

    def __init__(self, embed: Embed) -> None:
        self.embed = embed
        self._vectors: dict[str, np.ndarray] | None = None

    async def _exemplars(self) -> dict[str, np.ndarray]:
        if self._vectors is None:
            vectors = {}
            for intent, texts in EXEMPLARS.items():
                v = np.asarray(await self.embed(texts), dtype=np.float32)
                vectors[intent] = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
            self._vectors = vectors
        return self._vectors

    async def decide(self, question: str) -> RuleDecision | None:
        exemplars = await self._exemplars()
        q = np.asarray(await self.embed([question]), dtype=np.float32)[0]
        q = q / max(float(np.linalg.norm(q)), 1e-9)
        scores = sorted(((float(np.max(v @ q)), intent) for intent, v in exemplars.items()), reverse=True)
        (best, intent), (second, _) = scores[0], scores[1]
        if best - second >= MARGIN:
            return RuleDecision(intent, "exemplars", f"nearest exemplars {intent} {best:.2f} vs {second:.2f}")
        if intent != "DIAGNOSIS":
            # The keyword rule saw no incident vocabulary and the question is nearer chat than incidents:
            # the diagnosis path needs a question that reads like one (CHITCHAT and OTHER both answer as
            # chat). Only a close call that leans to DIAGNOSIS goes to the router model.
            return RuleDecision(
                intent, "exemplars", f"nearest exemplars {intent} {best:.2f} vs {second:.2f}, no incident vocabulary"
            )
        return None


async def route_without_model(question: str, exemplars: ExemplarRouter | None) -> RuleDecision | None:
    decided = by_rules(question)
    if decided is None and exemplars is not None:
        decided = await exemplars.decide(question)
    return decided
