"""The HTTP API of ``noema serve``: REST + JSON over the minds of one store, and MCP.

``noema.http.app.create_app`` builds the Starlette application: per-mind routes
under ``/v1/minds/{mind}/...`` (``noema.http.routes``), the OpenAPI 3.1 document
at ``/openapi.json`` (``noema.http.openapi``), bearer tokens scoped to minds
(``noema.http.auth``) and MCP over streamable HTTP at ``/v1/minds/{mind}/mcp``.
This package imports Starlette only when a module of it is imported, so
``import noema`` stays light.
"""
