"""Fair shares of a queue that every workspace feeds: which workspaces have rows waiting, and a batch in turns.

A batch takes a bounded share of each waiting workspace's rows instead of the oldest rows of all, so a
workspace with thousands waiting cannot fill every batch (docs/concurrency.md, "Fair shares").
"""

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

Row = TypeVar("Row")


def waiting_workspaces_sql(*, table: str, condition: str, first: str) -> str:
    """The body of a recursive CTE `waiting (workspace_id, first)`: each workspace with rows of `table` (alias
    `e`) meeting `condition`, with the smallest `first` of its rows, in workspace order.

    A skip scan: one probe of an index on (workspace_id, `first`) under `condition` per workspace, so its
    cost follows the number of workspaces waiting, never the number of rows of the one with the most.
    """
    return f"""
        (SELECT e.workspace_id, e.{first} FROM {table} e WHERE {condition}
         ORDER BY e.workspace_id, e.{first} LIMIT 1)
        UNION ALL
        SELECT next.workspace_id, next.{first} FROM waiting w CROSS JOIN LATERAL (
            SELECT e.workspace_id, e.{first} FROM {table} e WHERE {condition} AND e.workspace_id > w.workspace_id
            ORDER BY e.workspace_id, e.{first} LIMIT 1
        ) next
    """


def in_turns(rows: Iterable[Row], *, key: Callable[[Row], Hashable]) -> list[Row]:
    """The rows in turns: each workspace's first row, then each one's second, and so on (each workspace's own
    rows keep their order), so a row that stops the batch half-way (a server that hangs up) holds back
    the rows of its own workspace first."""
    rank: dict[Hashable, int] = defaultdict(int)
    ranked = []
    for position, row in enumerate(rows):
        ranked.append((rank[key(row)], position, row))
        rank[key(row)] += 1
    return [row for _, _, row in sorted(ranked, key=lambda item: item[:2])]
