"""Every public operation of a mind, declared once; the faces derive from these records.

Each :class:`Operation` holds an operation's name, summary, request and result
models, whether it writes, what its caller needs, and how REST, MCP and the
CLI show it. The faces are generic adapters over :data:`OPERATIONS`:

- REST (``noema.http``): one route per operation with a ``route``, its body or
  query string the request model, its OpenAPI entry built from the same models;
- MCP (``noema.mcp``): one tool per operation with ``mcp``, named as it is, its
  input schema the request model;
- the CLI (``noema.cli``): ``--json`` prints what the operation answers.

The operator's operations (``upkeep``: import, export to a file, checkpoint,
forget, a chat history's import, the maintenance jobs) open files the caller
names or change the whole mind: they are the CLI's and Python's only, and
``perform`` refuses them to a server's caller.

``Mind`` is the Python door to the same work, with keyword arguments and editor
completion, and ``AsyncMind`` is generated from it. ``tests/test_operations.py``
walks the declarations and checks every face against them.
"""

from __future__ import annotations

from noema.operations import episodes, federation, memories, minds, recall, upkeep, worlds
from noema.operations.spine import Cli, Needs, Operation, Route, answer, perform, request_of

__all__ = [
    "BY_NAME",
    "OPERATIONS",
    "Cli",
    "Needs",
    "Operation",
    "Route",
    "answer",
    "perform",
    "request_of",
]

#: Every operation, in the order the faces list them.
OPERATIONS: tuple[Operation, ...] = (
    *minds.OPERATIONS[:2],
    *recall.OPERATIONS,
    *memories.OPERATIONS,
    *minds.OPERATIONS[2:],
    *worlds.OPERATIONS,
    *episodes.OPERATIONS,
    *federation.OPERATIONS,
    *upkeep.OPERATIONS,
)
#: Each operation by its name.
BY_NAME: dict[str, Operation] = {operation.name: operation for operation in OPERATIONS}
