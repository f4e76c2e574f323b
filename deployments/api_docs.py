"""The API's description, complete, and its docs page served by the service itself.

The routes read their bodies themselves (so that bad input gets the API's own errors), which leaves
FastAPI's description with request bodies whose ``$ref``s point nowhere, no error shape and no word on
keys. ``complete_openapi`` fills that in: request-body models as components, the error body
(deployments/api_schemas.py) on every 4xx/5xx answer, and with API keys on the bearer scheme on the
routes that need one. ``/docs`` is Swagger UI from the files of the ``fastapi-offline`` package, served
from this app: it works where no CDN can be reached.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel

from deployments.api_schemas import ErrorBody
from deployments.auth import PROTECTED
from deployments.errors import error

REF = "#/components/schemas/"
# Request-body schemas (and what they refer to), by name: the components request bodies point at.
_BODIES: dict[str, dict[str, Any]] = {}
DOCS_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
_ASSET_DIR = Path(fastapi_offline.__file__).parent / "static"


def _components(model: type[BaseModel]) -> dict[str, dict[str, Any]]:
    schema = model.model_json_schema(ref_template=REF + "{model}")
    defs = schema.pop("$defs", {})
    return {**defs, model.__name__: schema}


def request_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` for a route that reads ``model`` from its JSON body."""
    _BODIES.update(_components(model))
    schema = {"$ref": REF + model.__name__}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def complete_openapi(app: FastAPI, authenticated: bool) -> None:
    def build() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = spec.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        schemas.update(_BODIES)
        schemas.update(_components(ErrorBody))
        error_ref = {"application/json": {"schema": {"$ref": REF + "ErrorBody"}}}
        for path, operations in spec.get("paths", {}).items():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                if authenticated and path.startswith(PROTECTED):
                    operation["security"] = [{"bearer": []}]
                    responses.setdefault("401", {"description": "no valid API key"})
                for code, answer in responses.items():
                    if code[0] in "45":
                        answer["content"] = error_ref
        for unused in ("HTTPValidationError", "ValidationError"):  # FastAPI's 422 shape, never sent here
            schemas.pop(unused, None)
        if authenticated:
            components["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer", "description": "An API key (RAYDIAG_API_KEYS)"}
            }
        app.openapi_schema = spec
        return spec

    app.openapi = build  # type: ignore[method-assign]


def add_docs_page(app: FastAPI) -> None:
    """``/docs``: Swagger UI over ``/openapi.json``, its script and style from this app."""

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return get_swagger_ui_html(
            openapi_url=f"{root}/openapi.json",
            title=f"{app.title} API",
            swagger_js_url=f"{root}/docs/swagger-ui-bundle.js",
            swagger_css_url=f"{root}/docs/swagger-ui.css",
            swagger_favicon_url=f"{root}/docs/favicon.png",
        )

    @app.get("/docs/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        if name not in DOCS_ASSETS:  # a fixed list: no path ever reaches the file system
            return error(404, "NOT_FOUND", f"no docs asset {name!r}")
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response((_ASSET_DIR / name).read_bytes(), media_type=DOCS_ASSETS[name], headers=headers)
