"""The API whose OpenAPI document is built once per process.

django-ninja builds ``/api/openapi.json`` from every route's pydantic models at each request:
about 0.65 s of CPU here (1.6 s the first time), for a document that cannot change while the
process runs (routes are mounted at import, user endpoints included). The endpoint is public
(the docs page and client generators read it), so every anonymous GET cost the server that
much. The built document is kept per path prefix; ``clear()`` forgets it.
"""

from __future__ import annotations

from typing import Any

from ninja import NinjaAPI
from ninja.openapi.schema import OpenAPISchema


class CachedSchemaApi(NinjaAPI):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._schemas: dict[str, OpenAPISchema] = {}

    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        if path_prefix is None:
            path_prefix = self.get_root_path(path_params or {})
        schema = self._schemas.get(path_prefix)
        if schema is None:
            schema = self._schemas[path_prefix] = super().get_openapi_schema(
                path_prefix=path_prefix
            )
        return schema

    def clear(self) -> None:
        self._schemas.clear()
