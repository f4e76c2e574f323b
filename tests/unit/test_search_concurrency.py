"""The search deployment serialises calls only where the client needs it: Milvus Lite (a file path)
one at a time, a Milvus server URI concurrently. The store is a stand-in that counts overlap."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import numpy as np
import pytest

import deployments.search as search_module


class OverlapStore:
    def __init__(self, uri: str, *args: Any) -> None:
        self.inside = 0
        self.most = 0
        self._mu = threading.Lock()

    def search(self, *args: Any) -> list[Any]:
        with self._mu:
            self.inside += 1
            self.most = max(self.most, self.inside)
        time.sleep(0.05)  # a search in flight
        with self._mu:
            self.inside -= 1
        return []


@pytest.mark.parametrize(("uri", "serial"), [("/tmp/x/milvus.db", True), ("http://milvus:19530", False)])
async def test_concurrent_searches(monkeypatch: pytest.MonkeyPatch, uri: str, serial: bool) -> None:
    monkeypatch.setattr(search_module, "KnowledgeStore", OverlapStore)
    dep = search_module.SearchDeployment.func_or_class(uri, "kb", 4)
    vec = np.zeros(4, dtype=np.float32)
    await asyncio.gather(*(dep.search("q", vec, None, "hybrid", 5, None) for _ in range(8)))
    # With a server, as many at once as asyncio's thread pool runs (min(32, CPUs + 4) ≥ 5).
    assert dep.store.most == 1 if serial else dep.store.most >= 5
