"""``whisper-subtitler watch`` as it is meant to run: a real process over a folder where media files arrive copied
in slowly, killed with SIGKILL at seeded random moments ten times and started again, then run to the end with
``--once``. At the end every good file is subtitled exactly once, the bad one failed with its error, the files that
had subtitles (a sidecar, an embedded stream) are untouched, and no temporary, partial or checkpoint file is left.
Real speech (espeak-ng), real videos (ffmpeg), the tiny model, the real queue (``whisper-subtitler queue --json``)."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests import media
from tests.conftest import run_cli
from tests.test_resume import long_clip
from whisper_subtitler.outputs import TEMP_PREFIX

OPTIONS = (
    "--model", "tiny.en", "--no-diarize", "--language", "en", "--batch-size", "1", "-f", "srt",
    "--name-template", "{stem}.{lang}", "--skip-existing", "en", "--settle", "1", "--rescan-interval", "1",
    "--max-attempts", "2", "--progress", "json",
)  # fmt: skip
GOOD = ("Short.wav", "Clip.mp4", "Long.wav")  # Long: 71 s, two decoding batches, so that kills land inside it
ARRIVALS = ("Sidecar.en.srt", "Sidecar.mp4", "Embedded.mkv", "Short.wav", "Bad.mkv", "Clip.mp4", "Long.wav")
KILLS = 10
SEED = 49


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("arrivals")
    media.espeak("The river is high today.", folder / "Short.wav")
    hello = media.espeak("Good evening, and welcome back.", folder / "hello.wav")
    media.video_from_audio(hello, folder / "Clip.mp4")
    media.video_from_audio(hello, folder / "Sidecar.mp4")
    (folder / "Sidecar.en.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nHello.\n", encoding="utf-8")
    (folder / "inside.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nHello.\n", encoding="utf-8")
    media.ffmpeg(
        "-i", str(folder / "Clip.mp4"), "-i", str(folder / "inside.srt"), "-map", "0", "-map", "1", "-c", "copy",
        "-c:s", "srt", "-metadata:s:s:0", "language=eng", str(folder / "Embedded.mkv"),
    )  # fmt: skip
    long_clip(folder / "Long.wav")
    (folder / "Bad.mkv").write_bytes(random.Random(SEED).randbytes(4096))
    return folder


def row_of(state: Path, path: Path) -> str | None:
    """The queue's state of ``path``, read as any other process would (None: no row, or no queue yet)."""
    if not (state / "queue.sqlite3").exists():
        return None
    try:
        with sqlite3.connect(state / "queue.sqlite3", timeout=30) as db:
            found = db.execute("SELECT status FROM files WHERE path = ?", (str(path),)).fetchone()
    except sqlite3.OperationalError:  # the database is being created
        return None
    return found[0] if found else None


def copy_slowly(sources: Path, library: Path, state: Path, taken_early: list[str]) -> None:
    """Copy each file in in four parts, 0.4 s apart (never unchanged for --settle 1 s until complete), noting any
    file the queue took while it was half-written."""
    for name in ARRIVALS:
        data = (sources / name).read_bytes()
        target = library / name
        with target.open("wb") as f:
            for k in range(4):
                f.write(data[k * len(data) // 4 : (k + 1) * len(data) // 4])
                f.flush()
                if k < 3:
                    time.sleep(0.4)
                    if row_of(state, target) is not None:
                        taken_early.append(name)
        time.sleep(0.3)


def started_a_file(log: Path) -> bool:
    return log.exists() and '{"file"' in log.read_text(encoding="utf-8", errors="replace")


@pytest.mark.slow
def test_watch_killed_ten_times_subtitles_each_file_once(sources: Path, tmp_path: Path) -> None:
    library, state = tmp_path / "library", tmp_path / "state"
    library.mkdir()
    command = [sys.executable, "-m", "whisper_subtitler", "watch", str(library), "--state-dir", str(state), *OPTIONS]
    taken_early: list[str] = []
    copier = threading.Thread(target=copy_slowly, args=(sources, library, state, taken_early))
    copier.start()
    rng = random.Random(SEED)
    logs = []
    for run in range(KILLS):
        log = tmp_path / f"run{run}.log"
        logs.append(log)
        with log.open("wb") as stderr:
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
        deadline = time.monotonic() + 15
        while not started_a_file(log) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # kill while a file is in progress: a moment after the first file started
        time.sleep(rng.uniform(0.0, 4.0))
        assert proc.poll() is None, log.read_text()  # still running: watch does not stop by itself
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    copier.join()
    assert taken_early == []  # a half-written file was never queued

    final = run_cli(*command[3:], "--once")
    logs.append(tmp_path / "final.log")
    logs[-1].write_text(final.stderr)
    assert final.returncode in (0, 1), final.stderr  # 1 when it was the one to fail Bad.mkv for the last time
    listed = run_cli("queue", "--state-dir", str(state), "--json")
    rows = {Path(row["path"]).name: row for row in json.loads(listed.stdout)}

    assert set(rows) == {"Short.wav", "Clip.mp4", "Long.wav", "Sidecar.mp4", "Embedded.mkv", "Bad.mkv"}
    said = [line for log in logs for line in log.read_text().splitlines()]
    for name in GOOD:
        stem = Path(name).stem
        assert rows[name]["status"] == "done" and rows[name]["subtitled"] == 1, rows[name]
        assert rows[name]["outputs"] == [str(library / f"{stem}.en.srt")]
        assert sum(line.startswith(f"wrote {library / stem}") for line in said) <= 1  # written by one run only
        done = [line for line in said if line.startswith("{") and json.loads(line)["file"] == str(library / name)]
        assert sum(json.loads(line)["stage"] == "done" for line in done) <= 1
    assert "clock" in (library / "Long.en.srt").read_text().lower()  # the sentence after the minute of silence
    assert sum(row["interruptions"] for row in rows.values()) >= 1  # kills landed inside files
    for name in ("Sidecar.mp4", "Embedded.mkv"):
        assert rows[name]["status"] == "skipped" and rows[name]["outputs"] == []
        assert (library / name).read_bytes() == (sources / name).read_bytes()
    assert (library / "Sidecar.en.srt").read_bytes() == (sources / "Sidecar.en.srt").read_bytes()
    bad = rows["Bad.mkv"]
    assert bad["status"] == "failed" and bad["attempts"] == 2
    assert bad["error"].startswith(f"{library / 'Bad.mkv'}: not a readable media file")

    expected = set(ARRIVALS) | {"Short.en.srt", "Clip.en.srt", "Long.en.srt"}
    assert sorted(p.name for p in library.iterdir()) == sorted(expected)  # no temporary or partial file
    assert not [p for p in state.rglob("*") if p.name.startswith(TEMP_PREFIX)]
    assert list((state / "checkpoints").glob("*")) == []

    again = run_cli("queue", "add", str(library / "Short.wav"), "--state-dir", str(state))
    assert again.returncode == 0 and "done:" in again.stderr  # already done and unchanged: not queued again
