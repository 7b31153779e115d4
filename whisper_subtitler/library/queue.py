"""The durable queue of a media library: one SQLite row per file, surviving restarts and SIGKILL.

The database is ``<state dir>/queue.sqlite3`` (stdlib ``sqlite3``, WAL journal, ``synchronous=FULL``: a committed
change survives a killed process and a power loss). Every change is one short transaction, so that a process
killed at any moment leaves the rows as they were before or after it, never between. Several processes may read
and write the rows at once (``watch``, ``queue add``, ``serve``; a writer waits up to ``BUSY_TIMEOUT_S`` for
another); only one process may *run* the files of a state directory: it holds ``StateLock`` (an ``fcntl`` lock on
``<state dir>/<name>.lock``, released by the kernel when the process dies, SIGKILL included).

A row's life: ``queued`` -> ``running`` (``claim``) -> ``done``, ``skipped`` or ``failed`` (``finish``);
``cancelled`` is set by ``cancel`` (a queued row, or a running one whose runner checks ``cancel_requested``). A
failure adds one to ``attempts``; a row is queued again after a failure until it has failed ``max_attempts``
times, then stays ``failed`` with its ``error`` until ``retry_failed``. A row left ``running`` by a process that
died is queued again by ``requeue_running`` when the lock holder starts; such an interruption is not a failure of the
file (``interruptions`` counts them, ``attempts`` does not), so killing a worker never makes a good file fail.

API (the Python objects; the ``whisper-subtitler queue`` command prints the same fields)::

    with Queue.open(state_dir) as q:                 # creates the folder and the database when missing
        q.add(path, options={"formats": ["srt"]})    # -> Row; re-queues a changed file (size or mtime)
        row = q.claim(worker="watch")                # -> Row | None: the oldest queued row, now running
        q.progress(row.id, 0.5)                      # a share of the file done (0..1), for ``GET /jobs/{id}``
        q.finish(row.id, Status.DONE, outputs=[...]) # or Status.FAILED with error=..., Status.SKIPPED
        q.rows(), q.get(row.id), q.find(path)        # reading
        q.cancel(row.id); q.retry_failed(); q.requeue_running()

    with StateLock(state_dir, "watch"):              # raises StateBusyError when another process holds it
        ...

Paths are stored absolute (``Path.absolute``, symlinks kept as given); times are Unix seconds (float); ``size`` is
in bytes, ``mtime`` the file's ``st_mtime`` (seconds). ``options`` is any JSON object the adder gives (``None``: the
runner's own options); ``origin`` says who added the row (``watch``, ``queue add``, ``serve``, ``webhook``: free
text); ``outputs`` the files written (JSON list of paths); ``subtitled`` how many times the file's subtitles were
written by a run (``finish`` with ``DONE`` and outputs), so that a test can check each file was done once.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from whisper_subtitler.errors import ExitCode, SubtitlerError
from whisper_subtitler.types import StrEnum

DATABASE = "queue.sqlite3"
BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another process's transaction (seconds)
DEFAULT_MAX_ATTEMPTS = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL UNIQUE,
    size INTEGER,
    mtime REAL,
    options TEXT,
    origin TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    interruptions INTEGER NOT NULL DEFAULT 0,
    subtitled INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    outputs TEXT NOT NULL DEFAULT '[]',
    progress REAL NOT NULL DEFAULT 0,
    worker TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    added REAL NOT NULL,
    updated REAL NOT NULL,
    started REAL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS files_status ON files (status, id);
"""


class Status(StrEnum):
    """A row's state."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    SKIPPED = "skipped"  # nothing to do: subtitles in the language exist (--skip-existing), or every output exists
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL = (Status.DONE, Status.SKIPPED, Status.FAILED, Status.CANCELLED)


class StateBusyError(SubtitlerError):
    """Another process holds the state directory's lock (two ``watch`` processes on one state): exit code 2, as
    for any other usage error, before anything is done."""

    exit_code = ExitCode.USAGE
    ends_batch = True


@dataclass(frozen=True)
class Row:
    """One file of the queue (see the module's docstring for the fields and their units)."""

    id: int
    path: str
    size: int | None
    mtime: float | None
    options: dict[str, Any] | None
    origin: str
    status: Status
    attempts: int
    interruptions: int
    subtitled: int
    error: str | None
    outputs: tuple[str, ...]
    progress: float
    worker: str | None
    cancel_requested: bool
    added: float
    updated: float
    started: float | None
    finished: float | None

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object (``queue --json``)."""
        data = asdict(self)
        data["status"] = str(self.status)
        data["outputs"] = list(self.outputs)
        return data


def _queued(origins: Sequence[str] | None) -> tuple[str, list[Any]]:
    """The SQL condition and parameters of a queued row, of one of ``origins`` when given."""
    where = "status = ?"
    params: list[Any] = [Status.QUEUED]
    if origins is not None:
        where += f" AND origin IN ({','.join('?' * len(origins))})"
        params.extend(origins)
    return where, params


def _row(values: sqlite3.Row) -> Row:
    data = dict(values)
    data["options"] = json.loads(data["options"]) if data["options"] is not None else None
    data["outputs"] = tuple(json.loads(data["outputs"] or "[]"))
    data["status"] = Status(data["status"])
    data["cancel_requested"] = bool(data["cancel_requested"])
    return Row(**data)


def stat_of(path: Path) -> tuple[int, float] | None:
    """``(size in bytes, mtime in seconds)`` of ``path``, or ``None`` when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime


class Queue:
    """The queue of one state directory (see the module's docstring). Not shared between threads: open one per
    thread (``Queue.open``); any number of processes may open the same one."""

    def __init__(self, connection: sqlite3.Connection, state_dir: Path) -> None:
        self._db = connection
        self.state_dir = state_dir

    @classmethod
    def open(cls, state_dir: Path) -> Queue:
        """Open (and create when missing) ``<state_dir>/queue.sqlite3``. Raises ``SubtitlerError`` when the folder
        cannot be created or the database cannot be opened."""
        try:
            state_dir.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(state_dir / DATABASE, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as e:
            raise SubtitlerError(f"{state_dir / DATABASE}: cannot open the queue ({e})") from None
        return cls(db, state_dir)

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``) so that a read-then-write cannot race."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def add(
        self,
        path: Path,
        options: dict[str, Any] | None = None,
        origin: str = "",
        *,
        size: int | None = None,
        mtime: float | None = None,
        force: bool = False,
    ) -> Row:
        """Queue ``path`` (made absolute); ``size``/``mtime`` default to the file's own (``None`` when it cannot be
        read: the runner's attempt then fails with the reason). A path already in the queue is queued again when
        its size or mtime changed (a replaced file: attempts, error and progress reset), when ``force``, or when
        its options differ from ``options`` (given, not ``None``); otherwise (same file, same options) the row is
        left as it is, whatever its state. A running row is never touched. Returns the row."""
        path = path.absolute()
        if size is None and mtime is None and (stat := stat_of(path)) is not None:
            size, mtime = stat
        encoded = json.dumps(options, sort_keys=True) if options is not None else None
        now = time.time()
        with self._write() as db:
            old = db.execute("SELECT * FROM files WHERE path = ?", (str(path),)).fetchone()
            if old is None:
                db.execute(
                    "INSERT INTO files (path, size, mtime, options, origin, status, added, updated) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (str(path), size, mtime, encoded, origin, Status.QUEUED, now, now),
                )
            elif old["status"] != Status.RUNNING and (
                force
                or (old["size"], old["mtime"]) != (size, mtime)
                or (encoded is not None and encoded != old["options"])
            ):
                db.execute(
                    "UPDATE files SET size = ?, mtime = ?, options = COALESCE(?, options), origin = ?, status = ?, "
                    "attempts = 0, error = NULL, progress = 0, cancel_requested = 0, updated = ?, started = NULL, "
                    "finished = NULL WHERE id = ?",
                    (size, mtime, encoded, origin or old["origin"], Status.QUEUED, now, old["id"]),
                )
            row = db.execute("SELECT * FROM files WHERE path = ?", (str(path),)).fetchone()
        return _row(row)

    def has_queued(self, origins: Sequence[str] | None = None) -> bool:
        """Whether a row (of one of ``origins`` when given) is queued: what ``claim`` would take, not taken."""
        where, params = _queued(origins)
        return self._db.execute(f"SELECT 1 FROM files WHERE {where} LIMIT 1", params).fetchone() is not None

    def claim(self, worker: str = "", origins: Sequence[str] | None = None) -> Row | None:
        """The oldest queued row (of one of ``origins`` when given), set ``running`` by ``worker`` in the same
        transaction (two processes never claim one row); ``None`` when nothing is queued."""
        where, params = _queued(origins)
        now = time.time()
        with self._write() as db:
            found = db.execute(f"SELECT id FROM files WHERE {where} ORDER BY id LIMIT 1", params).fetchone()
            if found is None:
                return None
            db.execute(
                "UPDATE files SET status = ?, worker = ?, started = ?, updated = ?, progress = 0 WHERE id = ?",
                (Status.RUNNING, worker, now, now, found["id"]),
            )
            row = db.execute("SELECT * FROM files WHERE id = ?", (found["id"],)).fetchone()
        return _row(row)

    def progress(self, row_id: int, fraction: float) -> None:
        """Record the share of a running row's file done (0 to 1)."""
        with self._write() as db:
            db.execute(
                "UPDATE files SET progress = ?, updated = ? WHERE id = ? AND status = ?",
                (min(1.0, max(0.0, fraction)), time.time(), row_id, Status.RUNNING),
            )

    def finish(
        self,
        row_id: int,
        status: Status,
        *,
        error: str | None = None,
        outputs: Sequence[Path | str] = (),
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        subtitled: bool | None = None,
    ) -> Row:
        """End a running row with ``status``: ``DONE`` (``outputs`` written: ``subtitled`` goes up by one when there
        are any, or as ``subtitled`` says), ``SKIPPED``, ``CANCELLED``, or ``FAILED`` with its one-line ``error``: one
        more attempt, and the row goes back to ``queued`` while it has failed fewer than ``max_attempts`` times.
        Returns the row."""
        now = time.time()
        with self._write() as db:
            old = db.execute("SELECT * FROM files WHERE id = ?", (row_id,)).fetchone()
            if old is None:
                raise KeyError(row_id)
            attempts, count, final = old["attempts"], old["subtitled"], status
            if status is Status.FAILED:
                attempts += 1
                final = Status.FAILED if attempts >= max_attempts else Status.QUEUED
            elif status is Status.DONE and (subtitled if subtitled is not None else bool(outputs)):
                count += 1
            db.execute(
                "UPDATE files SET status = ?, attempts = ?, subtitled = ?, error = ?, outputs = ?, progress = ?, "
                "worker = NULL, updated = ?, finished = ? WHERE id = ?",
                (
                    final,
                    attempts,
                    count,
                    error if status is Status.FAILED else None,
                    json.dumps([str(p) for p in outputs]),
                    1.0 if status is Status.DONE else old["progress"],
                    now,
                    now if final in FINAL else None,
                    row_id,
                ),
            )
            row = db.execute("SELECT * FROM files WHERE id = ?", (row_id,)).fetchone()
        return _row(row)

    def requeue_running(self, worker: str | None = None) -> int:
        """Queue again the rows left ``running`` (by ``worker``, or by anyone when ``None``) by a process that died;
        each counts one more interruption, not an attempt. Call it holding ``StateLock``. Returns how many."""
        where, params = (
            ("status = ?", [Status.RUNNING])
            if worker is None
            else (
                "status = ? AND worker = ?",
                [
                    Status.RUNNING,
                    worker,
                ],
            )
        )
        with self._write() as db:
            cursor = db.execute(
                f"UPDATE files SET status = CASE WHEN cancel_requested THEN '{Status.CANCELLED}' ELSE "
                f"'{Status.QUEUED}' END, interruptions = interruptions + 1, worker = NULL, updated = ? WHERE {where}",
                [time.time(), *params],
            )
            return cursor.rowcount

    def retry_failed(self) -> int:
        """Queue again every ``failed`` row with its attempts reset (``watch --retry-failed``). Returns how many."""
        with self._write() as db:
            cursor = db.execute(
                "UPDATE files SET status = ?, attempts = 0, updated = ?, finished = NULL WHERE status = ?",
                (Status.QUEUED, time.time(), Status.FAILED),
            )
            return cursor.rowcount

    def cancel(self, row_id: int) -> Row:
        """Cancel a row: a queued one is ``cancelled`` at once; a running one gets ``cancel_requested`` (its runner
        checks it and ends it ``CANCELLED``); a finished one is left as it is. Raises ``KeyError`` for no such row."""
        now = time.time()
        with self._write() as db:
            old = db.execute("SELECT * FROM files WHERE id = ?", (row_id,)).fetchone()
            if old is None:
                raise KeyError(row_id)
            if old["status"] == Status.QUEUED:
                db.execute(
                    "UPDATE files SET status = ?, updated = ?, finished = ? WHERE id = ?",
                    (Status.CANCELLED, now, now, row_id),
                )
            elif old["status"] == Status.RUNNING:
                db.execute("UPDATE files SET cancel_requested = 1, updated = ? WHERE id = ?", (now, row_id))
            row = db.execute("SELECT * FROM files WHERE id = ?", (row_id,)).fetchone()
        return _row(row)

    def get(self, row_id: int) -> Row | None:
        """The row with this id, or ``None``."""
        found = self._db.execute("SELECT * FROM files WHERE id = ?", (row_id,)).fetchone()
        return _row(found) if found is not None else None

    def find(self, path: Path) -> Row | None:
        """The row of ``path`` (made absolute), or ``None``."""
        found = self._db.execute("SELECT * FROM files WHERE path = ?", (str(path.absolute()),)).fetchone()
        return _row(found) if found is not None else None

    def rows(self, status: Status | None = None) -> list[Row]:
        """Every row (with ``status`` when given), oldest first."""
        if status is None:
            found = self._db.execute("SELECT * FROM files ORDER BY id").fetchall()
        else:
            found = self._db.execute("SELECT * FROM files WHERE status = ? ORDER BY id", (status,)).fetchall()
        return [_row(r) for r in found]

    def remove(self, row_id: int) -> None:
        """Delete a row (a file removed from the library)."""
        with self._write() as db:
            db.execute("DELETE FROM files WHERE id = ?", (row_id,))


class StateLock:
    """The exclusive right to run the files of ``state_dir``: an ``fcntl.flock`` on ``<state_dir>/<name>.lock``
    (which holds the holder's pid, for people). Taken on ``acquire``/``__enter__``, released on ``release``/exit or
    by the kernel when the process ends in any way. Raises ``StateBusyError`` when another process holds it, naming
    that process."""

    def __init__(self, state_dir: Path, name: str = "watch") -> None:
        self.path = state_dir / f"{name}.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock now or raise ``StateBusyError``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StateBusyError(
                f"{self.path.parent}: the state directory is in use by process {holder}",
                "one watch per state directory; stop it or give another --state-dir",
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        """Let the lock go (the file stays: removing it would race with a process taking it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StateLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/whisper-subtitler``, else ``~/.local/state/whisper-subtitler`` (XDG Base Directory
    Specification 0.8: the state directory holds data that persists between restarts, such as a queue)."""
    base = os.environ.get("XDG_STATE_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return root / "whisper-subtitler"
