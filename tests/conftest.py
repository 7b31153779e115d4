from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests import media

# Every cue built in the suite, in this process and in the CLI processes it starts, is held to the rule that no word
# of the transcript is lost without a guard's record (cues.builder raises instead of logging).
os.environ.setdefault("WHISPER_SUBTITLER_STRICT", "1")

# The durable queues and the server's lock (``$XDG_STATE_HOME/whisper-subtitler``) of every command the suite runs
# live in a folder of this process, never in the user's own state: a server started by a test would otherwise run
# jobs that another test (or the user) left there, and parallel test processes would share one queue.
_STATE = tempfile.mkdtemp(prefix="whisper-subtitler-state-")
os.environ["XDG_STATE_HOME"] = _STATE
atexit.register(shutil.rmtree, _STATE, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``make test`` runs ``-n 2 --dist loadfile``), give each worker its own share of the CPUs.

    Each worker, and every process it starts (the CLI, ffmpeg, Ray), is bound to its share with
    ``os.sched_setaffinity``, and torch in the worker uses that many threads: the workers never run more torch
    threads than there are cores, and what is single-threaded (imports, ffmpeg, Python) overlaps. The platform layer
    reads the affinity mask, so the CLI's own thread count follows (``platform.probe``). docs/design.md, "Checks".
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... in a worker; unset otherwise
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or workers < 2 or not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    share = set(cpus[int(worker[2:]) :: workers]) if len(cpus) >= workers else set(cpus)
    os.sched_setaffinity(0, share)
    import torch

    torch.set_num_threads(len(share))


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory) -> Path:
    """A session folder for generated media."""
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def sample_mp4(media_dir) -> Path:
    """x.mp4: pyannote's real two-speaker sample.wav under a test pattern (H.264 + AAC)."""
    return media.video_from_audio(media.SAMPLE_WAV, media_dir / "x.mp4", extra=("-c:a", "aac"))


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None, stdin: str | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Run ``whisper-subtitler ARGS`` as a user would (a real process), capturing text stdout and stderr."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "whisper_subtitler", *args],
        cwd=cwd,
        env=full_env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def cli():
    return run_cli
