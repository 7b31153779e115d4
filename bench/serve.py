"""Throughput and latency of ``whisper-subtitler serve`` on pyannote's 30-s sample, as Bazarr asks for subtitles.

    python bench/serve.py [--model base] [--workers 1] [--requests 8] [--clients 1,4] [--diarize] [--out FILE]

Starts the server on a free port of 127.0.0.1 (models loaded before the clock starts), then for each number of
clients sends ``--requests`` requests in all, each client one after another: ``POST /asr?output=srt&encode=false``
with the sample as raw 16 kHz mono s16le PCM, the way Bazarr's Whisper provider sends audio. Reports per number of
clients the requests per minute (requests / wall time) and the latency of each request (seconds from sending the
upload to the last byte of the reply: queue wait included), and the server's peak resident memory (``/health``,
the server process and its workers). Prints one JSON object; ``--out`` also writes it to a file.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import wave
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from common import write_json  # noqa: E402

from tests.media import SAMPLE_WAV  # noqa: E402  (pyannote's sample, located without importing pyannote)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: argparse.Namespace, port: int, log) -> subprocess.Popen:
    import httpx

    cmd = [sys.executable, "-m", "whisper_subtitler", "serve", "--port", str(port), "--workers", str(args.workers)]
    cmd += ["--model", args.model] if args.model else []
    cmd += ["--diarize"] if args.diarize else ["--no-diarize"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server ended with {proc.returncode}; see its log")
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
            return proc
        except httpx.TransportError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not start within 10 minutes")


def run(url: str, pcm: bytes, requests: int, clients: int) -> dict:
    """``requests`` requests from ``clients`` clients at once: requests per minute and latencies (seconds)."""
    import httpx

    def one(_: int) -> float:
        started = time.perf_counter()
        reply = httpx.post(
            f"{url}/asr",
            params={"output": "srt", "encode": "false", "task": "transcribe"},
            files={"audio_file": ("audio_file", pcm)},
            timeout=3600,
        )
        reply.raise_for_status()
        assert "-->" in reply.text
        return time.perf_counter() - started

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = list(pool.map(one, range(requests)))
    wall = time.perf_counter() - started
    return {
        "clients": clients,
        "requests": requests,
        "wall_s": round(wall, 2),
        "requests_per_minute": round(requests * 60 / wall, 2),
        "latency_s": {
            "median": round(statistics.median(latencies), 2),
            "min": round(min(latencies), 2),
            "max": round(max(latencies), 2),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="Whisper model (default: the server's, base)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--requests", type=int, default=8, help="requests per number of clients")
    parser.add_argument("--clients", default="1,4", help="numbers of clients at once, comma-separated")
    parser.add_argument("--diarize", action="store_true", help="label speakers (the server's default when installed)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import httpx

    with wave.open(str(SAMPLE_WAV)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 16000)
        pcm = w.readframes(w.getnframes())
        seconds = w.getnframes() / 16000
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile("w+") as log:
        proc = start(args, port, log)
        try:
            runs = [run(url, pcm, args.requests, int(c)) for c in args.clients.split(",")]
            health = httpx.get(f"{url}/health", timeout=10).json()
        finally:
            proc.terminate()
            code = proc.wait(600)
        if code != 0:
            log.seek(0)
            raise SystemExit(f"the server exited with {code}:\n{log.read()}")
    report = {
        "what": "POST /asr, output=srt, encode=false (Bazarr's raw PCM), pyannote's sample.wav",
        "audio_s": round(seconds, 2),
        "model": health["model"],
        "device": health["device"],
        "diarize": health["diarize"],
        "workers": health["workers"],
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "runs": runs,
        "peak_rss_mb": health["peak_rss_mb"],
        "peak_rss_mb_workers": health["peak_rss_mb_workers"],
    }
    write_json(report, args.out, indent=2, echo=True)


if __name__ == "__main__":
    main()
