"""``whisper-subtitler serve`` for real: the command started as a process on a free port, talked to with httpx as
Bazarr's Whisper provider talks to whisper-asr-webservice (multipart ``audio_file``, query parameters).

One server (tiny.en, two workers, an API key, a 1 MB upload limit, its own TMPDIR) answers the tests in file order;
the last stops it with SIGTERM. The replies are compared with the files ``transcribe`` writes for the same media
and options. A second server (the default multilingual model) detects languages.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import wave
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

import srt  # noqa: E402
import webvtt  # noqa: E402

from tests import media  # noqa: E402
from tests import media_multilingual as mm  # noqa: E402
from tests.conftest import run_cli  # noqa: E402
from tests.media_conversation import repeated_sample  # noqa: E402

pytestmark = pytest.mark.slow

KEY = "test-key-123"
FORMATS = ("srt", "vtt", "txt", "tsv", "json", "ass")
SPEECH = "Hello there. Every request gets an answer."


SERVERS = itertools.count()


class Server:
    """``whisper-subtitler serve ARGS`` on a port of 127.0.0.1 that the system picks (``--port 0``), with ``tmp`` as
    its TMPDIR. The port is read from the server's own "serving on" line: a port found free by the test and handed
    to the server could be taken by a server of a parallel test process meanwhile, and the test would talk to that
    one."""

    def __init__(self, tmp: Path, *args: str) -> None:
        self.tmp = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        self.url = ""
        self.log = (tmp.parent / f"server-{next(SERVERS)}.log").open("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "whisper_subtitler", "serve", "--port", "0", *args],
            env={**os.environ, "TMPDIR": str(tmp)},
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )

    def wait_ready(self) -> Server:
        """Wait until the server says where it listens and ``/health`` answers there (the models are loaded);
        fails when the process ends first."""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.stderr()
            if not self.url:
                found = re.search(r"serving on (http://127\.0\.0\.1:\d+)", self.stderr())
                self.url = found.group(1) if found else ""
            try:
                if self.url and httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise AssertionError(f"the server did not start: {self.stderr()}")

    def stderr(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def health(self) -> dict:
        return httpx.get(f"{self.url}/health", timeout=10).json()

    def leftovers(self) -> list[Path]:
        """Upload folders left in the server's TMPDIR (onnxruntime keeps a ``.ses`` file of its own there)."""
        return sorted(self.tmp.glob("whisper-subtitler-*"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def pcm_of(wav: Path) -> bytes:
    """The 16-bit samples of a 16 kHz mono WAV: what Bazarr sends (ffmpeg's s16le output)."""
    with wave.open(str(wav)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 16000)
        return w.readframes(w.getnframes())


# the CPU on every machine: the peak RSS bound and the cancelled job's length are the CPU's (on an H200, CUDA's
# libraries put the server at 4.1 GB and a job ended within the 0.3 s that the leaving client waits)
CPU = ("--gpu-backend", "cpu")


def post(server: Server, path: str, name: str, data: bytes, key: str | None = KEY, timeout=120, **params):
    headers = {"X-API-Key": key} if key is not None else {}
    return httpx.post(
        f"{server.url}{path}", params=params, files={"audio_file": (name, data)}, headers=headers, timeout=timeout
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The media (speech by espeak-ng: a WAV, a video of it, its raw PCM, broken files) and the files
    ``transcribe`` writes for them with the server's options, with its error lines for the broken ones."""
    folder = tmp_path_factory.mktemp("serve")
    wav = media.espeak(SPEECH, folder / "speech.wav")
    mp4 = media.video_from_audio(wav, folder / "clip.mp4", extra=("-c:a", "aac"))
    (folder / "empty.mp4").write_bytes(b"")
    (folder / "notes.txt").write_text("just some text, not media\n")
    (folder / "cut.mp4").write_bytes(mp4.read_bytes()[: mp4.stat().st_size // 2])
    raw = pcm_of(wav)
    out = folder / "transcribe"
    broken = [folder / name for name in ("empty.mp4", "notes.txt", "cut.mp4")]
    args = [str(mp4), str(wav), *map(str, broken), *CPU, "--model", "tiny.en", "--no-diarize", "-f", ",".join(FORMATS)]
    result = run_cli("transcribe", *args, "-o", str(out))
    assert result.returncode == 1, result.stderr  # the broken files failed, the others were written
    failures = {}
    for line in result.stderr.splitlines():
        if line.startswith("failed: "):
            path = line.removeprefix("failed: ").split(": ", 1)[0]
            name = Path(path).name
            failures[name] = line.removeprefix("failed: ").replace(f"file:{path}", name).replace(path, name)
    return {"folder": folder, "mp4": mp4, "wav": wav, "pcm": raw, "out": out, "failures": failures}


@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    """The server, loading its models while ``transcribe`` writes the reference files."""
    server = Server(
        tmp_path_factory.mktemp("serve-tmp") / "tmp",
        *CPU,
        *("--model", "tiny.en", "--no-diarize", "--workers", "2", "--api-key", KEY, "--max-upload-mb", "1"),
    )
    try:
        request.getfixturevalue("files")
        yield server.wait_ready()
    finally:
        server.stop()


def reference(files, stem: str, fmt: str) -> bytes:
    return (files["out"] / f"{stem}.{fmt}").read_bytes()


def same_as_transcribe(reply: bytes, files, stem: str, fmt: str, name: str) -> None:
    """The reply is what ``transcribe`` wrote; only the source name differs (the upload's name, not a path)."""
    expected = reference(files, stem, fmt)
    source = str(files["mp4"] if stem == "clip" else files["wav"])
    if fmt == "json":
        got, want = json.loads(reply), json.loads(expected)
        assert got.pop("source") == name and want.pop("source") == source
        assert same_json(got, want)
    elif fmt == "ass":
        assert reply == expected.replace(f"Title: {source}".encode(), f"Title: {name}".encode())
    else:
        assert reply == expected, fmt
    if fmt == "srt":
        assert list(srt.parse(reply.decode())) == list(srt.parse(expected.decode()))
        assert len(list(srt.parse(reply.decode()))) >= 1
    if fmt == "vtt":
        got_captions = [(c.start, c.end, c.text) for c in webvtt.from_string(reply.decode()).captions]
        want_captions = [(c.start, c.end, c.text) for c in webvtt.from_string(expected.decode()).captions]
        assert got_captions == want_captions and len(got_captions) >= 1


def same_json(got, want) -> bool:
    """Equal, floats to 1e-5: two workers share the cores (one PyTorch thread each here), and sums over another
    number of threads round differently in the last digits of probabilities."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(same_json(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(same_json(a, b) for a, b in zip(got, want))
    if isinstance(want, float):
        return got == pytest.approx(want, rel=1e-5, abs=1e-5)
    return got == want


def test_sixteen_requests_on_two_workers_of_video_and_pcm_in_every_output_all_equal_to_transcribe(server, files):
    # videos (encode=true), and raw s16le PCM as Bazarr sends it: the field's name as the file name
    requests = [("clip", "clip.mp4", files["mp4"].read_bytes(), "true")] * 8 + [
        ("speech", "audio_file", files["pcm"], "false")
    ] * 8
    outputs = [FORMATS[i % len(FORMATS)] for i in range(16)]
    seen: list[dict] = []
    done = threading.Event()
    before = server.health()["done"]

    def watch() -> None:  # /health answers while the jobs run
        while not done.is_set():
            seen.append(server.health())
            time.sleep(0.1)

    def ask(request: tuple, output: str):
        _, name, data, encode = request
        bazarr = {"task": "transcribe", "language": "en"} if encode == "false" else {}  # Bazarr's parameters
        return post(server, "/asr", name, data, output=output, encode=encode, **bazarr)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(ask, requests, outputs))
    finally:
        done.set()
        watcher.join()
    for (stem, name, _, _), fmt, reply in zip(requests, outputs, replies):
        assert reply.status_code == 200, reply.text
        assert reply.headers["content-disposition"] == f'attachment; filename="{name}.{fmt}"'
        same_as_transcribe(reply.content, files, stem, fmt, name)
    assert max(h["running"] for h in seen) == 2  # two at a time, the others waited
    assert max(h["waiting"] for h in seen) >= 1
    health = server.health()
    assert (health["running"], health["waiting"], health["done"], health["failed"]) == (0, 0, before + 16, 0)
    print(f"peak RSS of the server with two tiny.en workers: {health['peak_rss_mb']} MB")
    assert health["peak_rss_mb"] < 3000
    assert server.leftovers() == []


def test_bad_inputs_get_the_cli_cause_and_status_and_the_server_keeps_serving(server, files):
    folder, failures = files["folder"], files["failures"]
    for name, status in (("empty.mp4", 400), ("notes.txt", 400), ("cut.mp4", 400)):
        reply = post(server, "/asr", name, (folder / name).read_bytes(), output="srt")
        assert reply.status_code == status, reply.text
        assert reply.json()["detail"] == failures[name], name  # the line transcribe prints, the upload named
    unknown = post(server, "/asr", "clip.mp4", b"x", output="xyz")
    assert unknown.status_code == 422 and unknown.json()["detail"] == "unknown output format 'xyz'"
    typed = post(server, "/asr", "clip.mp4", b"x", output="srt", min_speakers="two")
    assert typed.status_code == 422 and typed.json()["detail"].startswith("min_speakers: ")
    channels = post(server, "/asr", "clip.mp4", b"x", output="srt", channels="middle")
    assert channels.status_code == 422 and channels.json()["detail"].startswith("--channels 'middle': choose auto")
    rttm = post(server, "/asr", "clip.mp4", b"x", output="rttm")
    assert rttm.status_code == 422 and rttm.json()["detail"] == "--format rttm needs speaker turns"
    large = post(server, "/asr", "big.mp4", b"\0" * (1024 * 1024 + 1), output="srt")
    assert large.status_code == 413 and "larger than the limit of 1 MB" in large.json()["detail"]
    missing = post(server, "/asr", "clip.mp4", b"x", key=None)
    assert missing.status_code == 401 and missing.json()["detail"] == "the X-API-Key header is missing"
    wrong = post(server, "/detect-language", "clip.mp4", b"x", key="nope")
    assert wrong.status_code == 403 and "API key" in wrong.json()["detail"]
    good = post(server, "/asr", "clip.mp4", files["mp4"].read_bytes(), output="vtt")
    assert good.status_code == 200
    same_as_transcribe(good.content, files, "clip", "vtt", "clip.mp4")
    assert server.leftovers() == []


def test_the_openapi_page_documents_the_compatible_parameters(server):
    assert httpx.get(f"{server.url}/docs", timeout=10).status_code == 200
    spec = httpx.get(f"{server.url}/openapi.json", timeout=10).json()
    asr = spec["paths"]["/asr"]["post"]
    names = {p["name"] for p in asr["parameters"]}
    assert {"encode", "task", "language", "initial_prompt", "output", "word_timestamps", "vad_filter"} <= names
    assert {"diarize", "min_speakers", "max_speakers", "speaker_names", "speaker_style", "max_cps"} <= names
    assert "audio_file" in asr["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]
    assert "/detect-language" in spec["paths"] and "/health" in spec["paths"]


def test_a_client_that_goes_away_cancels_its_job(server, files, tmp_path):
    # three minutes of real speech (Opus, 0.4 MB: under the upload limit): a job no machine ends within the 0.3 s
    # that the client waits (a few seconds of espeak-ng speech did, on a 16-core CPU)
    wav = repeated_sample(tmp_path / "long.wav", 180)[0]
    opus = tmp_path / "long.opus"
    subprocess.run(["ffmpeg", "-v", "error", "-i", str(wav), "-c:a", "libopus", "-b:a", "16k", str(opus)], check=True)
    before = server.health()["cancelled"]
    with pytest.raises(httpx.ReadTimeout):
        post(server, "/asr", "long.opus", opus.read_bytes(), output="srt", timeout=httpx.Timeout(10, read=0.3))
    deadline = time.monotonic() + 60
    while (server.health()["cancelled"] == before or server.health()["running"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    health = server.health()
    assert health["cancelled"] == before + 1 and health["running"] == 0
    assert server.leftovers() == []  # the next requests are answered in the test below


def test_sigterm_finishes_the_running_jobs_refuses_the_waiting_and_exits_0(server, files):
    with ThreadPoolExecutor(3) as pool:
        replies = [
            pool.submit(post, server, "/asr", "audio_file", files["pcm"], output="srt", encode="false")
            for _ in range(3)
        ]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            health = server.health()
            if health["running"] == 2 and health["waiting"] == 1:
                break
            time.sleep(0.05)
        assert (health["running"], health["waiting"]) == (2, 1)
        server.proc.send_signal(signal.SIGTERM)
        answers = sorted((r.result() for r in replies), key=lambda r: r.status_code)
    assert [r.status_code for r in answers] == [200, 200, 503]
    for reply in answers[:2]:
        same_as_transcribe(reply.content, files, "speech", "srt", "audio_file")
    assert answers[2].json()["detail"] == "the server is stopping"
    assert server.proc.wait(60) == 0, server.stderr()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/health", timeout=5)
    assert server.leftovers() == []


def test_detect_language_in_english_and_spanish(tmp_path):
    spanish = tmp_path / "pangrama.wav"
    mm.build(spanish, ["es/pangrama"], lead=0.3)
    english = media.espeak(SPEECH, tmp_path / "english.wav")
    pcm = pcm_of(english)
    server = Server(tmp_path / "tmp", "--no-diarize").wait_ready()  # the default model, multilingual
    try:
        heard = post(server, "/detect-language", "audio_file", pcm, key=None, encode="false")  # as Bazarr asks
        assert heard.status_code == 200, heard.text
        assert heard.json()["detected_language"] == "english" and heard.json()["language_code"] == "en"
        heard = post(server, "/detect-language", "pangrama.wav", spanish.read_bytes(), key=None)
        assert heard.status_code == 200, heard.text
        assert heard.json()["detected_language"] == "spanish" and heard.json()["language_code"] == "es"
        assert 0.5 < heard.json()["confidence"] <= 1.0
        assert server.leftovers() == []
    finally:
        server.stop()
