"""The API's OpenAPI description is valid OpenAPI 3.1, every reference in it resolves, every operation
says what it answers on success and that its errors are the error body the app sends, the bearer scheme
guards what the keys guard; /docs is served from the app itself (no CDN). The app is the one the fuzz
drives (tests/fuzz_requests.py: create_api with keys and alerts, the /v1 routes, MCP)."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import jsonschema
from openapi_spec_validator import validate

from tests.fuzz_requests import KEY, fuzz_app


def _resolve(spec: dict[str, Any], ref: str) -> Any:
    node: Any = spec
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


async def test_the_description_is_complete_and_valid() -> None:
    async with fuzz_app() as app:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            spec = (await c.get("/openapi.json")).json()
            refused = await c.post(
                "/api/chat",
                content=b"{",
                headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
            )
            bad_param = await c.post(
                "/v1/chat/completions",
                json={"messages": [{"role": "user", "content": "x"}], "n": 3},
                headers={"Authorization": f"Bearer {KEY}"},
            )
    validate(spec)  # OpenAPI 3.1, by the spec's own schema
    refs = set(re.findall(r'"\$ref": "([^"]+)"', json.dumps(spec)))
    assert refs and all(_resolve(spec, r) is not None for r in refs)  # KeyError if one points nowhere
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # FastAPI's 422 shape is never sent
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            answers = op["responses"]
            ok = [code for code in answers if code.startswith("2")]
            assert ok and any(answers[c].get("content") for c in ok), f"{method} {path}: no success schema"
            for code, answer in answers.items():
                if code[0] in "45":
                    assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
            if path.startswith(("/api/", "/v1/")):
                assert op["security"] == [{"bearer": []}] and "401" in answers, f"{method} {path}"
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key (RAYDIAG_API_KEYS)",
    }
    # What was sent is what was described: the errors validate against the documented body.
    error_schema = {**spec["components"]["schemas"]["ErrorBody"], "components": spec["components"]}
    for answer in (refused, bad_param):
        assert answer.status_code == 400
        jsonschema.validate(answer.json(), error_schema)
    assert bad_param.json()["error"]["param"] == "n"


async def test_docs_are_served_from_the_app() -> None:
    async with fuzz_app() as app:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            page = await c.get("/docs")
            script = await c.get("/docs/swagger-ui-bundle.js")
            style = await c.get("/docs/swagger-ui.css")
            missing = await c.get("/docs/..%2f..%2fpyproject.toml")
    assert page.status_code == 200 and "/docs/swagger-ui-bundle.js" in page.text and "/openapi.json" in page.text
    assert not re.search(r"(src|href)=[\"']https?://", page.text)  # nothing from another origin
    assert script.status_code == 200 and len(script.content) > 500_000 and "SwaggerUIBundle" in script.text
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
    assert missing.status_code == 404
