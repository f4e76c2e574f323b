"""The web console in headless Chromium (Debian's, driven by Playwright) against the running app's
scripted-model profile: ask, watch progress, read the report, expand a reference, open the trace.
Screenshots go to a temporary directory, so a test run leaves the checkout as it was;
`make screenshots` runs this test with RAYDIAG_SCREENSHOT_DIR=benchmarks/results/console to refresh
the ones in docs/operations.md."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
# As root, in a sandbox with no network but loopback: no sandbox, no background connections.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("RAYDIAG_SCREENSHOT_DIR")
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("console-shots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _ask(page: Any, question: str) -> Any:
    page.fill("#question", question)
    page.click("#ask")
    turn = page.locator(".turn").last
    turn.locator(".actions .trace-link").wait_for(timeout=90_000)
    return turn


def test_chat_report_reference_and_trace(browser: Any, scripted_app: dict[str, str], shots: Path) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    sent_auth: list[str] = []
    page.on("request", lambda r: sent_auth.append(r.headers.get("authorization", "")) if "/api/" in r.url else None)
    page.goto(scripted_app["base"] + "/")
    assert page.title() == "raydiag console"

    # Authentication is on: without a key the service answers 401 and the page says so.
    page.fill("#question", "HikariCP pool exhausted?")
    page.click("#ask")
    refused = page.locator(".turn .banner.failure").first
    refused.wait_for(timeout=30_000)
    assert "UNAUTHORIZED" in refused.inner_text()
    page.click("#new-session")

    # The API key is entered once, kept in the browser session and sent with every API call.
    page.fill("#api-key", scripted_app["key"])
    page.click("#key-form button")
    assert page.evaluate("sessionStorage.getItem('raydiag.apiKey')") == scripted_app["key"]
    sent_auth.clear()

    turn = _ask(page, "payment-service: HikariCP connection pool exhausted, Connection is not available")
    assert turn.get_attribute("data-content-type") == "DIAGNOSIS_REPORT"
    assert turn.get_attribute("data-outcome") == "SUCCESS"
    progress = turn.locator(".progress").inner_text()
    for stage in ("ROUTING", "PLANNING", "DIAGNOSIS_RUNNING", "SAFETY_VALIDATING", "done: SUCCESS"):
        assert stage in progress
    assert turn.locator(".progress li.tool.done-ok").count() >= 1  # lookup_knowledge started and finished
    # What the tools found was on screen before the answer: on the wall clock the demo telemetry holds
    # nothing recent, so no measured line, and the runbook the lookup found, attributed.
    assert turn.locator(".progress li.early.finding").count() == 0
    early = turn.locator(".progress li.early.guidance")
    assert early.count() == 1 and "GUIDANCE (runbook hikaricp-pool-exhaustion" in early.first.inner_text()
    assert turn.locator(".conclusion").inner_text().strip()

    ref = turn.locator("details.ref").first
    excerpt = ref.locator("pre.excerpt")
    assert not excerpt.is_visible()
    ref.locator("summary").click()
    assert excerpt.is_visible() and len(excerpt.inner_text()) >= 20
    assert all(a == f"Bearer {scripted_app['key']}" for a in sent_auth) and sent_auth
    page.screenshot(path=str(shots / "chat.png"), full_page=True)

    # A Chinese question renders as asked.
    zh = _ask(page, "支付服务数据库连接池耗尽，请求超时，怎么排查？")
    assert zh.locator(".question").inner_text() == "支付服务数据库连接池耗尽，请求超时，怎么排查？"
    page.screenshot(path=str(shots / "chat-zh.png"), full_page=True)

    # The trace view of the first run.
    run_id = turn.get_attribute("data-run-id")
    session_id = page.locator("#session-id").inner_text()
    turn.locator(".trace-link").click()
    page.locator("#gantt .row").first.wait_for(timeout=30_000)
    assert page.url.endswith(f"/runs/{session_id}/{run_id}")
    labels = page.locator("#gantt .row").evaluate_all("rows => rows.map(r => r.dataset.label)")
    for phase in ("ROUTING", "PLANNING", "AGENT", "EVIDENCE", "SEMANTIC", "RELEASE"):
        assert phase in labels, labels
    assert any(lbl.startswith("tool · lookup_knowledge") for lbl in labels)
    assert any(lbl.startswith("model · ") for lbl in labels)

    trace = httpx.get(
        f"{scripted_app['base']}/api/diagnosis/{session_id}/trace",
        params={"runId": run_id},
        headers={"Authorization": f"Bearer {scripted_app['key']}"},
    ).json()
    assert int(page.locator("#token-total").inner_text()) == trace["run"]["total_token_count"]
    assert page.locator("#reconciled").inner_text() == "reconciled"
    assert page.locator("#facts tbody tr").count() >= 1
    page.locator("details.tool-call summary").first.click()
    assert "rag_lookup_v1" in page.locator("details.tool-call").first.inner_text()
    assert page.locator(".runs li").count() == 2  # both runs of the session

    with page.expect_response(lambda r: r.url.endswith("/feedback"), timeout=60_000) as fb:
        page.click("#thumbs-up")
    assert fb.value.status == 202, fb.value.text()
    # A locator wait, not wait_for_function: the console's CSP forbids the eval a string predicate needs.
    expect(page.locator("#feedback-state")).to_contain_text("stored (up)", timeout=30_000)
    page.screenshot(path=str(shots / "trace.png"), full_page=True)
    page.close()
