"""The durable queue (``library.queue``): rows, states, attempts, interruptions, the state lock, in real SQLite
files and real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from whisper_subtitler.library.queue import Queue, StateBusyError, StateLock, Status, default_state_dir


@pytest.fixture
def media(tmp_path: Path) -> Path:
    path = tmp_path / "lib" / "Movie.mkv"
    path.parent.mkdir()
    path.write_bytes(b"x" * 10)
    return path


def test_add_claim_finish_and_requeue_on_change(tmp_path: Path, media: Path) -> None:
    with Queue.open(tmp_path / "state") as q:
        row = q.add(media, origin="watch")
        assert (row.status, row.size, row.path) == (Status.QUEUED, 10, str(media))
        assert q.add(media).id == row.id  # the same file again: nothing changes
        claimed = q.claim(worker="w")
        assert claimed is not None and claimed.status is Status.RUNNING and q.claim() is None
        done = q.finish(claimed.id, Status.DONE, outputs=[media.with_suffix(".srt")])
        assert (done.status, done.subtitled, done.progress) == (Status.DONE, 1, 1.0)
        assert q.add(media).status is Status.DONE  # unchanged: not queued again
        media.write_bytes(b"y" * 20)  # replaced by a new version
        again = q.add(media)
        assert (again.status, again.size, again.subtitled) == (Status.QUEUED, 20, 1)


def test_failures_count_until_max_attempts_then_retry(tmp_path: Path, media: Path) -> None:
    with Queue.open(tmp_path / "state") as q:
        q.add(media)
        for attempt in range(1, 4):
            claimed = q.claim()
            assert claimed is not None
            row = q.finish(claimed.id, Status.FAILED, error="bad.mkv: no audio stream", max_attempts=3)
            assert row.attempts == attempt
        assert row.status is Status.FAILED and row.error == "bad.mkv: no audio stream" and q.claim() is None
        assert q.retry_failed() == 1
        assert q.rows(Status.QUEUED)[0].attempts == 0


def test_a_row_left_running_by_a_killed_process_is_queued_again(tmp_path: Path, media: Path) -> None:
    state = tmp_path / "state"
    code = (
        "import os, sys; from pathlib import Path; from whisper_subtitler.library.queue import Queue\n"
        "q = Queue.open(Path(sys.argv[1])); q.add(Path(sys.argv[2])); q.claim('watch'); os.kill(os.getpid(), 9)"
    )
    killed = subprocess.run([sys.executable, "-c", code, str(state), str(media)], check=False)
    assert killed.returncode == -9
    with Queue.open(state) as q:
        assert q.rows()[0].status is Status.RUNNING
        assert q.requeue_running() == 1
        row = q.rows()[0]
        assert (row.status, row.interruptions, row.attempts) == (Status.QUEUED, 1, 0)


def test_cancel(tmp_path: Path, media: Path) -> None:
    with Queue.open(tmp_path / "state") as q:
        row = q.add(media)
        assert q.cancel(row.id).status is Status.CANCELLED
        row = q.add(media, force=True)
        q.claim()
        assert q.cancel(row.id).cancel_requested
        assert q.finish(row.id, Status.CANCELLED).status is Status.CANCELLED


def test_two_processes_cannot_hold_one_state(tmp_path: Path) -> None:
    state = tmp_path / "state"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from whisper_subtitler.library.queue import StateLock\n"
            "l = StateLock(Path(sys.argv[1])); l.acquire(); print('held', flush=True); time.sleep(60)",
            str(state),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StateBusyError, match=str(holder.pid)):
            StateLock(state).acquire()
    finally:
        holder.kill()
        holder.wait()
    with StateLock(state):  # the kernel let the dead holder's lock go
        pass


def test_default_state_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_state_dir() == tmp_path / "whisper-subtitler"
    monkeypatch.setenv("XDG_STATE_HOME", "relative")  # not absolute: ignored, as the specification says
    assert default_state_dir() == Path.home() / ".local/state/whisper-subtitler"
    assert os.sep not in default_state_dir().name
