"""A batch spread over Ray workers (``--executor ray``) and shares of a batch (``--shard``), issue 17.

The Ray tests share one local cluster of 2 CPUs, started once for the module; each run joins it with
``--ray-address`` and ``--cpus-per-worker 1``, so it has 2 workers, as on a 2-core machine.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import media
from whisper_subtitler.errors import UsageError
from whisper_subtitler.inputs import parse_shard, take_shard

FAST = ("--model", "tiny.en", "--no-diarize")


def test_shards_cover_a_batch_exactly_once():
    sources = [Path(p) for p in ("b/2.wav", "a/9.mp4", "c.mkv", "a/10.mp4", "b/1.wav", "z.wav", "d/e/f.ogg")]
    shares = [take_shard(sources, k, 3) for k in (1, 2, 3)]
    together = [p for share in shares for p in share]
    assert sorted(together) == sorted(sources)  # each file once, none lost
    assert [len(s) for s in shares] == [3, 2, 2]
    assert take_shard(list(reversed(sources)), 2, 3) == shares[1]  # the same share whatever the order given
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "1/0", "3", "a/b", "1/3/5", "-1/3", ""):
        with pytest.raises(UsageError):
            parse_shard(bad)


def test_shard_on_the_command_line(tmp_path, cli):
    clip = tmp_path / "only.wav"
    clip.write_bytes(b"")  # never opened: the share of 2/2 is empty
    bad = cli("transcribe", str(clip), *FAST, "--shard", "3/2")
    assert bad.returncode == 2 and "--shard '3/2'" in bad.stderr and "Traceback" not in bad.stderr
    empty = cli("transcribe", str(clip), *FAST, "--shard", "2/2", "--json")
    assert empty.returncode == 0, empty.stderr
    summary = json.loads(empty.stdout)
    assert summary["files"] == [] and summary["exit_code"] == 0
    assert list(tmp_path.iterdir()) == [clip]


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> list[Path]:
    """Four 6-second pieces of pyannote's real speech sample, and a file that is not media."""
    folder = tmp_path_factory.mktemp("batch")
    clips = []
    for i in range(4):
        clips.append(folder / f"clip{i}.wav")
        media.ffmpeg("-ss", str(6 * i + 1), "-t", "6", "-i", str(media.SAMPLE_WAV), str(clips[-1]))
    (folder / "bad.mp4").write_text("not a video\n")
    return [*clips, folder / "bad.mp4"]


@pytest.fixture(scope="module")
def local_run(batch, tmp_path_factory):
    """The batch through the local executor: (output folder, --json summary, stderr)."""
    from tests.conftest import run_cli

    out = tmp_path_factory.mktemp("local")
    result = run_cli("transcribe", *map(str, batch), *FAST, "--output-dir", str(out), "--json")
    assert result.returncode == 1, result.stderr  # the bad file
    return out, json.loads(result.stdout), result.stderr


@pytest.fixture(scope="module")
def ray_address():
    """A local Ray cluster of 2 CPUs for the module (its processes are children of this one); its address."""
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    sigterm = signal.getsignal(signal.SIGTERM)
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, object_store_memory=100 * 2**20)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
    signal.signal(signal.SIGTERM, sigterm)  # ray.init set its own


def _ray_args(address: str, out: Path) -> tuple[str, ...]:
    return (*FAST, "--executor", "ray", "--ray-address", address, "--cpus-per-worker", "1", "-o", str(out), "--json")


def _same_outputs(local: Path, remote: Path) -> None:
    names = sorted(p.name for p in local.iterdir())
    assert names == sorted(p.name for p in remote.iterdir())  # nothing else: no temporary file
    assert len(names) == 8
    for name in names:
        assert (local / name).read_bytes() == (remote / name).read_bytes(), name


@pytest.mark.slow
def test_ray_workers_write_what_the_local_run_writes(batch, local_run, ray_address, tmp_path, cli):
    local_out, local_summary, local_err = local_run
    out = tmp_path / "ray"
    result = cli("transcribe", *map(str, batch), *_ray_args(ray_address, out), "-v")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("Ray worker (pid") == 2  # both workers loaded the model and worked
    summary = json.loads(result.stdout)  # stdout holds the summary alone: Ray prints nothing there
    assert summary["counts"] == local_summary["counts"] == {"done": 4, "skipped": 0, "failed": 1}
    for mine, theirs in zip(summary["files"], local_summary["files"]):  # input order, like the local run
        for key in ("input", "status", "error", "duration", "language"):
            assert mine[key] == theirs[key], key
        assert [Path(p).name for p in mine["outputs"]] == [Path(p).name for p in theirs["outputs"]]
    _same_outputs(local_out, out)
    failed = [line for line in result.stderr.splitlines() if line.startswith("failed:")]
    assert failed == [line for line in local_err.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "not a readable media file" in failed[0]


@pytest.mark.slow
def test_a_worker_killed_during_a_file_loses_no_file(batch, local_run, ray_address, tmp_path):
    import psutil

    out = tmp_path / "ray"
    command = [
        sys.executable,
        "-m",
        "whisper_subtitler",
        "transcribe",
        *map(str, batch[:4]),
        *_ray_args(ray_address, out),
    ]
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and driver.poll() is None and time.monotonic() < deadline:
        for process in psutil.Process().children(recursive=True):  # the cluster's processes are ours
            try:
                if process.cmdline()[:1] == ["ray::FileWorker.process"]:  # Ray's title while it works on a file
                    os.kill(process.pid, signal.SIGKILL)
                    killed = process.pid
                    break
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        time.sleep(0.02)
    stdout, stderr = driver.communicate(timeout=600)
    assert killed is not None, stderr
    assert driver.returncode == 0, stderr
    said = " ".join(stderr.split())  # Rich wraps long lines where the path's length puts the edge
    assert f"(pid {killed} on" in said and "trying again (2 of 3)" in said  # the file went to a worker again
    assert json.loads(stdout)["counts"] == {"done": 4, "skipped": 0, "failed": 0}
    _same_outputs(local_run[0], out)


@pytest.fixture(scope="module")
def film(tmp_path_factory) -> Path:
    """A 10-second 5.1 AC-3 MKV (the encoder tags it 5.1(side)): real speech (pyannote's sample, 1-11 s) in the
    front centre, a music bed made with sox at the speech's level in the five other channels
    (``tests/media_channels.py``, issue 47)."""
    from tests.media_channels import rms, surround
    from tests.media_speech import SAMPLE_RATE, read_wav

    speech = read_wav(media.SAMPLE_WAV)[SAMPLE_RATE : 11 * SAMPLE_RATE]
    return surround(tmp_path_factory.mktemp("film") / "film-51.mkv", speech, rms(speech), "5.1", "ac3", seed=4)


@pytest.mark.slow
def test_ray_workers_take_the_centre_of_a_surround_mix_as_the_local_run_does(film, ray_address, tmp_path, cli):
    """``--channels auto`` travels to the Ray workers: they transcribe the front centre of a 5.1 film, report it in
    the ``--json`` summary and the JSON transcript as the local executor does, and write the same bytes."""
    local = cli("transcribe", str(film), *FAST, "-f", "srt,json", "-o", str(tmp_path / "local"), "--json")
    assert local.returncode == 0, local.stderr
    remote = cli("transcribe", str(film), "-f", "srt,json", *_ray_args(ray_address, tmp_path / "ray"))
    assert remote.returncode == 0, remote.stderr
    assert "Traceback" not in remote.stderr
    mine, theirs = json.loads(remote.stdout)["files"][0], json.loads(local.stdout)["files"][0]
    assert mine["audio_channel"] == theirs["audio_channel"]
    assert mine["audio_channel"]["used"] == "FC" and "layout 5.1" in mine["audio_channel"]["reason"], mine
    assert (tmp_path / "ray" / "film-51.srt").read_bytes() == (tmp_path / "local" / "film-51.srt").read_bytes()
    written, local_json = (json.loads((tmp_path / side / "film-51.json").read_text()) for side in ("ray", "local"))
    assert written["audio_channel"] == local_json["audio_channel"]  # word probabilities differ in the last digits
    assert written["audio_channel"]["used"] == "FC" and written["audio_channel"]["layout"] == "5.1(side)"  # AC-3's
    assert written["text"] == local_json["text"] and len(written["text"].split()) > 10  # the dialogue, not the score
