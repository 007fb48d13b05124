"""The MCP server over one mind (``noema mcp``); see ``noema.mcp.server``.

Import ``build_server`` from ``noema.mcp.server``: this package does not import the
``mcp`` SDK until then, so ``import noema`` stays light.
"""
