"""The Responses store of a proxy of several processes: one SQLite file they all use.

A follow-up naming `previous_response_id` may reach any process of the group, so what one
stores every other must find. Each conversation is kept as in the one-process store: a turn per
response, pointing at the turn it continues, so a chain of N turns holds each item once; a
turn is dropped when no response and no later turn holds it. Each call is one short
transaction (WAL, no fsync: the store is a cache, lost with the group), so it runs on the
event loop like the in-memory store's work, which parsing the conversation outweighs.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from agent_eval.proxy.responses.store import StoreBounds, StoredResponse, Turn

BUSY_TIMEOUT = 30.0
SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT, previous INTEGER, items BLOB NOT NULL,
    count INTEGER NOT NULL, holders INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY, worker TEXT NOT NULL, turn INTEGER, response BLOB,
    size INTEGER NOT NULL, used REAL NOT NULL, recency INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS responses_by_use ON responses (recency);
CREATE TABLE IF NOT EXISTS totals (
    one INTEGER PRIMARY KEY CHECK (one = 1), bytes INTEGER NOT NULL, count INTEGER NOT NULL,
    uses INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES (1, 0, 0, 0);
"""
CHAIN = """
WITH RECURSIVE chain(id, previous, items, count, depth) AS (
    SELECT id, previous, items, count, 0 FROM turns WHERE id = ?
    UNION ALL
    SELECT t.id, t.previous, t.items, t.count, c.depth + 1
    FROM turns t JOIN chain c ON t.id = c.previous)
SELECT items, count FROM chain ORDER BY depth DESC
"""


def prepare_store(path: Path) -> None:
    """Make the group's store file, before its processes open it (one writes the schema, in
    the write-ahead-log mode the file keeps, so none of them waits on another to)."""
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)


class SharedResponseStore:
    """ResponseStore's answers within its bounds, kept in a file every process of the group opens.

    `bytes` counts each held turn once, however many responses share it."""

    def __init__(self, path: Path, bounds: StoreBounds) -> None:
        # Its default clock, time.monotonic, is one clock for every process of a Linux host.
        self._bounds = bounds
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
        self._db.execute("PRAGMA synchronous=OFF")

    def close(self) -> None:
        self._db.close()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT count FROM totals").fetchone()[0])

    @property
    def bytes(self) -> int:
        return int(self._db.execute("SELECT bytes FROM totals").fetchone()[0])

    def put(self, response_id: str, stored: StoredResponse) -> None:
        with self._transaction():
            now = self._bounds.clock()
            self._expire(now)
            self._pop(response_id)
            turn = self._hold(stored.conversation)
            self._db.execute(
                "INSERT INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (response_id, stored.worker, turn, stored.response, stored.size, now, self._use()),
            )
            self._count(stored.size, 1)
            while self._over():
                self._drop_oldest()

    def get(self, response_id: str) -> StoredResponse | None:
        """The stored response, its time to live renewed; None when unknown or expired."""
        with self._transaction():
            now = self._bounds.clock()
            self._expire(now)
            row = self._db.execute(
                "SELECT worker, turn, response FROM responses WHERE id = ?", (response_id,)
            ).fetchone()
            if row is None:
                return None
            self._db.execute(
                "UPDATE responses SET used = ?, recency = ? WHERE id = ?",
                (now, self._use(), response_id),
            )
            worker, turn, response = row
            conversation = self._turn(turn) if turn is not None else None
        return StoredResponse(worker, conversation, _view(response))

    def pop(self, response_id: str) -> StoredResponse | None:
        """Forget a response; the stored one (without its conversation), or None."""
        with self._transaction():
            return self._pop(response_id)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        # IMMEDIATE: the write lock from the start, so two processes never both read, then
        # both fail to upgrade to writing.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _pop(self, response_id: str) -> StoredResponse | None:
        row = self._db.execute(
            "DELETE FROM responses WHERE id = ? RETURNING worker, turn, response, size",
            (response_id,),
        ).fetchone()
        if row is None:
            return None
        worker, turn, response, size = row
        self._count(-size, -1)
        self._release(turn)
        return StoredResponse(worker, None, _view(response))

    def _turn(self, turn: int) -> Turn:
        """The conversation up to turn `turn`, as one turn standing for the whole chain."""
        rows = self._db.execute(CHAIN, (turn,)).fetchall()
        elements = [items[1:-1] for items, _ in rows if len(items) > 2]
        joined = memoryview(b"[" + b",".join(elements) + b"]")
        return Turn(joined, None, rows[-1][1], row=turn)

    def _hold(self, turn: Turn | None) -> int | None:
        """Store the turns of a chain not held yet, count one more holder of the first that
        is; the newest turn's id."""
        pending: list[Turn] = []
        while turn is not None and not self._held_again(turn):
            pending.append(turn)
            turn = turn.previous
        previous = turn.row if turn is not None else None
        for new in reversed(pending):
            new.row = self._db.execute(
                "INSERT INTO turns (previous, items, count, holders) VALUES (?, ?, ?, 1) "
                "RETURNING id",
                (previous, new.items, new.count),
            ).fetchone()[0]
            self._count(len(new.items), 0)
            previous = new.row
        return previous

    def _held_again(self, turn: Turn) -> bool:
        """Whether the turn is stored (another process may have dropped it), now with one more
        holder."""
        if turn.row is None:
            return False
        held = self._db.execute(
            "UPDATE turns SET holders = holders + 1 WHERE id = ?", (turn.row,)
        ).rowcount
        return bool(held)

    def _release(self, turn: int | None) -> None:
        """One holder fewer for the turn; a turn left without any goes, and so on back."""
        while turn is not None:
            holders, previous, size = self._db.execute(
                "UPDATE turns SET holders = holders - 1 WHERE id = ? "
                "RETURNING holders, previous, length(items)",
                (turn,),
            ).fetchone()
            if holders > 0:
                return
            self._db.execute("DELETE FROM turns WHERE id = ?", (turn,))
            self._count(-size, 0)
            turn = previous

    def _use(self) -> int:
        """The next number in the order of use, which eviction follows (the clock may not tick
        between two uses)."""
        return int(
            self._db.execute("UPDATE totals SET uses = uses + 1 RETURNING uses").fetchone()[0]
        )

    def _count(self, size: int, count: int) -> None:
        self._db.execute("UPDATE totals SET bytes = bytes + ?, count = count + ?", (size, count))

    def _over(self) -> bool:
        size, count = self._db.execute("SELECT bytes, count FROM totals").fetchone()
        return bool(count > self._bounds.capacity or size > self._bounds.max_bytes)

    def _expire(self, now: float) -> None:
        # Every use adds the same ttl, so the expired responses are the least recently used.
        while (oldest := self._oldest()) is not None and oldest[1] <= now - self._bounds.ttl:
            self._pop(oldest[0])

    def _drop_oldest(self) -> None:
        oldest = self._oldest()
        assert oldest is not None, "dropped only while the store is over a bound"
        self._pop(oldest[0])

    def _oldest(self) -> tuple[str, float] | None:
        row = self._db.execute("SELECT id, used FROM responses ORDER BY recency LIMIT 1").fetchone()
        return None if row is None else (row[0], row[1])


def _view(data: bytes | None) -> memoryview | None:
    return memoryview(data) if data is not None else None
