"""The server's parts without a model: the job queue (order, limits, cancelling, stopping) and the streamed upload
(file, name, size limit, raw PCM as WAV). The server itself, with a model, is tested in test_serve.py."""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
import wave
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from whisper_subtitler.serve.jobs import Cancelled, JobQueue, ShuttingDown, check_cancel  # noqa: E402
from whisper_subtitler.serve.upload import RequestError, display_name, receive_upload  # noqa: E402

BOUNDARY = "b0undary"


def never() -> asyncio.Future:
    """A client that stays connected."""
    return asyncio.get_running_loop().create_future()


def run_eight(workers: list[str]) -> tuple[JobQueue, list[int], int]:
    """Eight jobs of 50 ms sent one after another: ``(queue, start order, most jobs at once)``. The first jobs hold
    their workers until every request waits in line: on a loaded machine a first job could otherwise end while the
    later requests are still being sent, and a request that arrives just as a worker is freed can take it before
    the longest waiter's turn comes (``asyncio.Queue`` does not hand the item to the getter it wakes)."""
    started: list[int] = []
    active, most = [0], [0]
    lock = threading.Lock()
    gate = threading.Event()

    def job(n: int):
        def run(worker: str, cancel: threading.Event) -> int:
            with lock:
                started.append(n)
                active[0] += 1
                most[0] = max(most[0], active[0])
            assert gate.wait(10)
            time.sleep(0.05)
            with lock:
                active[0] -= 1
            return n

        return run

    async def main():
        queue = JobQueue(workers)
        results = []
        for n in range(8):  # each request enters the queue before the next, as requests arrive one by one
            results.append(asyncio.ensure_future(queue.run(job(n), never())))
            await asyncio.sleep(0)
        while queue.counts.waiting < 8 - len(workers):
            await asyncio.sleep(0.001)
        gate.set()
        assert await asyncio.gather(*results) == list(range(8))
        queue.shutdown()
        return queue

    return asyncio.run(main()), started, most[0]


def test_jobs_run_in_arrival_order_on_at_most_the_workers():
    queue, started, most = run_eight(["only"])
    assert started == list(range(8)) and most == 1  # first in, first out
    queue, started, most = run_eight(["a", "b"])
    assert sorted(started) == list(range(8)) and most == 2
    assert (queue.counts.done, queue.counts.running, queue.counts.waiting) == (8, 0, 0)


def test_a_client_gone_while_waiting_leaves_the_queue_and_one_gone_while_running_cancels_its_job():
    release = threading.Event()

    def blocking(worker, cancel):
        release.wait(5)
        return "first"

    def cancellable(worker, cancel):
        progress = check_cancel(cancel)
        for _ in range(500):
            progress("transcribe", None)
            time.sleep(0.01)
        return "not cancelled"

    async def main():
        queue = JobQueue(["only"])
        first = asyncio.ensure_future(queue.run(blocking, never()))
        await asyncio.sleep(0.05)
        gone = asyncio.get_running_loop().create_future()
        waiting = asyncio.ensure_future(queue.run(lambda w, c: "never runs", gone))
        await asyncio.sleep(0.05)
        assert queue.counts.waiting == 1
        gone.set_result(None)
        with pytest.raises(Cancelled):
            await waiting
        release.set()
        assert await first == "first"
        gone = asyncio.get_running_loop().create_future()
        running = asyncio.ensure_future(queue.run(cancellable, gone))
        await asyncio.sleep(0.1)
        assert queue.counts.running == 1
        gone.set_result(None)
        with pytest.raises(Cancelled):
            await running
        await asyncio.sleep(0)  # the worker comes back when its thread has ended
        assert await queue.run(lambda w, c: w, never()) == "only"
        queue.shutdown()
        return queue.counts

    counts = asyncio.run(main())
    assert (counts.done, counts.cancelled, counts.running, counts.waiting) == (2, 2, 0, 0)


def test_closing_refuses_the_waiting_and_new_requests_and_lets_the_running_job_finish():
    release = threading.Event()

    async def main():
        queue = JobQueue(["only"])
        running = asyncio.ensure_future(queue.run(lambda w, c: release.wait(5) and "finished", never()))
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(queue.run(lambda w, c: "never runs", never()))
        await asyncio.sleep(0.05)
        queue.close()
        with pytest.raises(ShuttingDown):
            await waiting
        with pytest.raises(ShuttingDown):
            await queue.run(lambda w, c: "never runs", never())
        release.set()
        assert await running == "finished"
        queue.shutdown()

    asyncio.run(main())


def test_a_failing_job_is_counted_and_its_worker_comes_back():
    def failing(worker, cancel):
        raise ValueError("broken")

    async def main():
        queue = JobQueue(["only"])
        with pytest.raises(ValueError, match="broken"):
            await queue.run(failing, never())
        assert await queue.run(lambda w, c: "next", never()) == "next"
        queue.shutdown()
        return queue.counts

    counts = asyncio.run(main())
    assert (counts.failed, counts.done) == (1, 1)


def multipart(parts: list[tuple[str, str | None, bytes]]) -> bytes:
    """A multipart/form-data body of ``(field, filename, data)`` parts (RFC 7578)."""
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename is not None else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


def upload(body: bytes, *, limit: int = 10_000, pcm: bool = False, chunk: int = 7, **kwargs):
    async def chunks():
        for i in range(0, len(body), chunk):  # small pieces: boundaries fall across chunks
            yield body[i : i + chunk]

    content_type = kwargs.pop("content_type", f"multipart/form-data; boundary={BOUNDARY}")
    return asyncio.run(receive_upload(chunks(), content_type, limit=limit, pcm=pcm, **kwargs))


def test_the_file_is_streamed_to_a_private_temporary_folder_and_the_client_name_is_only_a_name(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    data = bytes(range(256)) * 20
    body = multipart([("task", None, b"transcribe"), ("audio_file", "../../etc/evil\\x.mp4", data)])
    received = upload(body)
    assert received.path.read_bytes() == data and received.size == len(data)
    assert received.name == "x.mp4"
    assert received.path.parent == received.folder and received.folder.parent == tmp_path
    assert received.path.name == "upload"
    assert (received.folder.stat().st_mode & 0o777) == 0o700
    received.discard()
    assert list(tmp_path.iterdir()) == []


def test_raw_pcm_becomes_a_16_khz_mono_wav_of_the_same_samples(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    pcm = bytes(range(200)) * 10  # 1000 samples of 16 bits
    received = upload(multipart([("audio_file", "audio_file", pcm)]), pcm=True, chunk=13)  # odd chunks split samples
    with wave.open(str(received.path)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()) == (1, 2, 16000, 1000)
        assert w.readframes(1000) == pcm
    received.discard()


def test_an_upload_over_the_limit_is_refused_while_streaming_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(RequestError) as caught:
        upload(multipart([("audio_file", "big.mkv", b"x" * 5000)]), limit=4000)
    assert caught.value.status == 413 and "larger than the limit" in caught.value.message
    with pytest.raises(RequestError) as declared:  # a declared length over the limit: refused before reading
        upload(b"", limit=4000, content_length=10_000_000)
    assert declared.value.status == 413
    assert list(tmp_path.iterdir()) == []


def test_a_body_without_the_file_field_is_a_parameter_error(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for body, kwargs in [
        (multipart([("file", "x.mp4", b"data")]), {}),
        (b"audio_file=x", {"content_type": "application/x-www-form-urlencoded"}),
    ]:
        with pytest.raises(RequestError) as caught:
            upload(body, **kwargs)
        assert caught.value.status == 422 and caught.value.message == "audio_file: no media file in the request"
    assert list(tmp_path.iterdir()) == []


def test_display_names():
    assert display_name(None) == display_name("") == "audio_file"
    assert display_name("C:\\Users\\me\\film.mkv") == "film.mkv"
    assert display_name("a\x00b\n.srt") == "ab.srt"
    assert Path(display_name("../../x")).name == "x"


def test_replace_shares_the_models_and_refuses_options_that_need_others():
    from dataclasses import replace

    from whisper_subtitler import Subtitler
    from whisper_subtitler.errors import UsageError
    from whisper_subtitler.options import CueOptions, SpeakerOptions

    sub = Subtitler(model="tiny.en", diarize=False, device="cpu", load=False)
    other = sub.replace(decoding=replace(sub.decoding, language="English"), cues=CueOptions(max_cps=20.0))
    assert other.pipeline.models.shared is sub.pipeline.models
    assert (other.decoding.language, other.cues.max_cps, sub.cues.max_cps) == ("en", 20.0, 17.0)
    assert not other.diarizing
    with pytest.raises(UsageError, match="model"):
        sub.replace(decoding=replace(sub.decoding, model="base"))
    with pytest.raises(UsageError, match="diarization is off"):
        sub.replace(speakers=SpeakerOptions(diarize=True))


def test_a_dispatchers_looks_at_an_empty_job_queue_are_not_counted_and_each_job_counts_as_it_ended(
    tmp_path, monkeypatch
):
    # an H200 run found /health's "done" 2 higher than the jobs answered: each dispatcher's look at the empty
    # durable queue (at start and every RECHECK_S) took a worker and was counted as a job done, and so were
    # failed rows
    from whisper_subtitler.errors import SubtitlerError
    from whisper_subtitler.library.queue import Status
    from whisper_subtitler.serve import async_jobs

    monkeypatch.setattr(async_jobs, "RECHECK_S", 0.02)

    class Worker:
        def call(self, request, cancel, progress):
            _, path, _, _, results, _ = request
            if path.endswith("bad.mkv"):
                raise SubtitlerError(f"{path}: no audio stream")
            Path(results).mkdir(parents=True)
            (Path(results) / "result.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nHello.\n")
            return {"sidecars": []}

    media = [tmp_path / "good.mkv", tmp_path / "bad.mkv"]
    for path in media:
        path.write_bytes(b"")

    async def main():
        jobs = async_jobs.AsyncJobs(tmp_path / "state", lambda params: {}, "{stem}.{lang}")
        jobs.start()
        run_one, claims = jobs._run_one, []

        def counted(worker, cancel):
            claims.append(worker)
            return run_one(worker, cancel)

        jobs._run_one = counted
        queue = JobQueue([Worker(), Worker()])
        dispatchers = [asyncio.ensure_future(jobs.dispatch(queue)) for _ in queue.workers]
        await asyncio.sleep(0.4)  # each dispatcher looks about 20 times at the empty queue
        idle = (queue.counts.done, queue.counts.failed, queue.counts.running, len(claims))
        for path in media:
            jobs.add_path(path, None, "serve")
        deadline = time.monotonic() + 10
        while any(row.status not in (Status.DONE, Status.FAILED) for row in jobs.queue.rows()):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)  # more looks at the empty queue
        queue.close()
        await asyncio.gather(*dispatchers)
        queue.shutdown()
        jobs.stop()
        return idle, queue.counts, {Path(row.path).name: row.status for row in jobs.queue.rows()}

    idle, counts, statuses = asyncio.run(main())
    assert idle == (0, 0, 0, 2)  # one claim a dispatcher at start (rows a stopped server left); then no worker taken
    assert statuses == {"good.mkv": Status.DONE, "bad.mkv": Status.FAILED}
    assert (counts.done, counts.failed, counts.cancelled, counts.running, counts.waiting) == (1, 1, 0, 0, 0)
