"""No input reaches a 5xx on any route (tests/fuzz_requests.py): 1,500 fuzzed requests here, from a
fixed seed; benchmarks/fuzz_routes.py sends 10,000+ and keeps the count."""

from __future__ import annotations

from collections import Counter

from tests.fuzz_requests import fuzz_app, requests, send_all


async def test_no_fuzzed_request_gets_a_5xx() -> None:
    async with fuzz_app() as app:
        results = await send_all(app, requests(1500, seed=20261206))
    crashes = [(req.summary(), status, text) for req, status, text in results if status >= 500]
    assert crashes == [], crashes[:5]
    statuses = Counter(status for _, status, _ in results)
    # The fuzz reaches past the door: answers, refusals of the body, of the key and of the method.
    assert statuses[200] > 100 and statuses[400] > 100 and statuses[401] > 50 and statuses[405] > 10, statuses
