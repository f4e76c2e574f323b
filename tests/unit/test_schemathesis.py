"""Schemathesis against the service's own OpenAPI description of /api/*: every generated request,
valid or not, gets a documented non-5xx answer."""

from __future__ import annotations

import schemathesis
from hypothesis import settings

from tests.unit.test_fuzz import APP

schema = schemathesis.openapi.from_asgi("/openapi.json", APP).include(path_regex=r"^/api/")


@schema.parametrize()
@settings(max_examples=30, deadline=None)
def test_api_never_answers_5xx(case: schemathesis.Case) -> None:
    response = case.call()
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.status_code} {response.text}"
