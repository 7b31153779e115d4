"""``serve``'s asynchronous jobs and webhook for real: the command started as a process (tiny.en, one worker, a
library folder and its own state directory), talked to with httpx.

In file order: a job by path and one by upload, each done with the words spoken; a path outside the library (403);
Sonarr's and Radarr's "On Import" payloads and a plain ``{"path": ...}``, whose subtitles land beside the media as
the media servers name them; a queued job and a running one cancelled; then a server killed (SIGKILL) while one job
runs and another waits, and started again on the same state directory: both jobs complete; then stopped with
SIGTERM while a job runs: it exits with 0 and the job is queued again.
"""

from __future__ import annotations

import shutil
import signal
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")

import psutil  # noqa: E402
import srt  # noqa: E402

from tests import media  # noqa: E402
from tests.test_serve import CPU, Server  # noqa: E402
from whisper_subtitler.library.queue import Queue, Status  # noqa: E402

pytestmark = pytest.mark.slow

SPEECH = "Hello there. Every request gets an answer."
LONG = " ".join(
    [
        "The library keeps every episode in its own folder, and the server writes the subtitles beside them.",
        "A long file takes a while, so the client asks for a job and comes back later for the result.",
        "Nothing is lost when the server stops: the queue lives on the disk and the job starts again.",
    ]
    * 1
)
FINISHED = ("done", "failed", "cancelled")
KEY = "jobs-key-7"
api = httpx.Client(headers={"X-API-Key": KEY})  # the server requires its key on every job endpoint


def start(folder: Path, library: Path, state: Path) -> Server:
    return Server(
        folder,
        *CPU,
        *("--model", "tiny.en", "--no-diarize", "--library", str(library), "--state-dir", str(state)),
        *("--path-map", f"/tv={library}/tv", "--api-key", KEY),
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The library (a short clip under several names, a long one), the state directory, and the server."""
    root = tmp_path_factory.mktemp("jobs")
    library, state = root / "library", root / "state"
    (library / "tv" / "Show" / "Season 01").mkdir(parents=True)
    (library / "movies" / "Film (2020)").mkdir(parents=True)
    short = media.espeak(SPEECH, root / "short.wav")
    names = {
        "path": library / "clip.wav",
        "sonarr": library / "tv" / "Show" / "Season 01" / "Show - S01E01.wav",
        "radarr": library / "movies" / "Film (2020)" / "Film (2020).wav",
        "plain": library / "plain.wav",
        "queued": library / "queued.wav",
    }
    for path in names.values():
        shutil.copy(short, path)
    names["long"] = media.espeak(LONG, library / "long.wav")
    names["long2"] = library / "long2.wav"
    shutil.copy(names["long"], names["long2"])
    server = start(root / "tmp", library, state)
    try:
        yield {"root": root, "library": library, "state": state, "files": names, "short": short, "server": server}
    finally:
        server.stop()


@pytest.fixture(scope="module")
def server(setup):
    return setup["server"].wait_ready()


def job_by_path(server: Server, path: Path | str, **params) -> httpx.Response:
    return api.post(f"{server.url}/jobs", json={"path": str(path)}, params=params, timeout=30)


def wait(server: Server, job_id: int, states=FINISHED, timeout: float = 240) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = api.get(f"{server.url}/jobs/{job_id}", timeout=10).json()
        if job["state"] in states:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} is still {job['state']}: {server.stderr()}")


def words_of(data: bytes) -> str:
    return media.normalize(" ".join(cue.content for cue in srt.parse(data.decode())))


def check_done(server: Server, job_id: int) -> dict:
    job = wait(server, job_id)
    assert job["state"] == "done", job
    assert job["progress"] == 1.0 and {"srt", "vtt", "json", "txt"} <= set(job["formats"])
    reply = api.get(f"{server.url}/jobs/{job_id}/result", params={"output": "srt"}, timeout=10)
    assert reply.status_code == 200
    assert "every request" in words_of(reply.content)
    return job


def test_job_by_path(server, setup):
    assert httpx.post(f"{server.url}/jobs", json={"path": str(setup["files"]["path"])}).status_code == 401
    reply = job_by_path(server, setup["files"]["path"], language="en")
    assert reply.status_code == 201, reply.text
    job = reply.json()
    assert job["state"] in ("queued", "running") and job["path"] == str(setup["files"]["path"].resolve())
    assert reply.headers["location"] == f"/jobs/{job['id']}"
    done = check_done(server, job["id"])
    assert done["sidecars"] == []  # a job keeps its subtitles in the state directory
    assert sorted(p.name for p in setup["library"].glob("*.srt")) == []
    vtt = api.get(f"{server.url}/jobs/{job['id']}/result", params={"output": "vtt"}, timeout=10).text
    assert vtt.startswith("WEBVTT")
    again = job_by_path(server, setup["files"]["path"], language="en")  # the same file and options: that job
    assert again.status_code == 200 and again.json()["id"] == job["id"] and again.json()["state"] == "done"


def test_job_by_upload(server, setup):
    data = setup["short"].read_bytes()
    reply = api.post(f"{server.url}/jobs", files={"audio_file": ("talk.wav", data)}, timeout=30)
    assert reply.status_code == 201, reply.text
    job = reply.json()
    assert job["name"] == "talk.wav" and job["path"] is None
    check_done(server, job["id"])
    got = api.get(f"{server.url}/jobs/{job['id']}/result", params={"output": "srt"}, timeout=10)
    assert got.headers["content-disposition"] == 'attachment; filename="talk.wav.srt"'
    assert list((setup["state"] / "uploads").iterdir()) == []  # the upload is removed once done
    missing = api.get(f"{server.url}/jobs/{job['id']}/result", params={"output": "rttm"}, timeout=10)
    assert missing.status_code == 422  # no speaker turns without diarization


def test_outside_the_library_is_refused(server, setup):
    outside = setup["root"] / "outside.wav"
    shutil.copy(setup["short"], outside)
    escape = setup["library"] / ".." / "outside.wav"  # inside by its text, outside once resolved
    rows_before = api.get(f"{server.url}/jobs", timeout=10).json()
    for path in (outside, escape, "/etc/passwd"):
        reply = job_by_path(server, path)
        assert reply.status_code == 403, reply.text
        assert "outside the library folders" in reply.json()["detail"]
    hook = api.post(f"{server.url}/webhook", json={"path": str(outside)}, timeout=10)
    assert hook.status_code == 403
    assert api.get(f"{server.url}/jobs", timeout=10).json() == rows_before  # nothing queued
    assert job_by_path(server, setup["library"] / "nothing.wav").status_code == 404
    assert api.get(f"{server.url}/jobs/9999", timeout=10).status_code == 404


def test_sonarr_radarr_and_plain_webhooks(server, setup):
    files, library = setup["files"], setup["library"]
    sonarr = {  # Sonarr v4 "On Import": the paths Sonarr sees (/tv in its container, mapped by --path-map)
        "eventType": "Download",
        "isUpgrade": False,
        "series": {"id": 1, "title": "Show", "path": "/tv/Show", "tvdbId": 1},
        "episodes": [{"id": 1, "episodeNumber": 1, "seasonNumber": 1, "title": "Pilot"}],
        "episodeFile": {
            "id": 7,
            "relativePath": "Season 01/Show - S01E01.wav",
            "path": "/tv/Show/Season 01/Show - S01E01.wav",
        },
    }
    radarr = {  # Radarr "On Import": movieFile without its absolute path, the movie's folder instead
        "eventType": "Download",
        "movie": {"id": 3, "title": "Film", "year": 2020, "folderPath": str(library / "movies" / "Film (2020)")},
        "movieFile": {"id": 9, "relativePath": "Film (2020).wav"},
        "isUpgrade": False,
    }
    test = api.post(f"{server.url}/webhook", json={"eventType": "Test", "series": {"path": "/tv/x"}}, timeout=10)
    assert test.status_code == 200 and test.json()["jobs"] == []
    ids = {}
    for key, status in ((None, 401), ("wrong", 403)):  # no key, a wrong one: refused before anything is read
        query = {"api_key": key} if key else {}
        assert httpx.post(f"{server.url}/webhook", params=query, json=sonarr, timeout=10).status_code == status
    for source, payload in (("sonarr", sonarr), ("radarr", radarr), ("plain", {"path": str(files["plain"])})):
        if source == "sonarr":  # the key in the URL: Sonarr and Radarr before v4 send no headers of their own
            reply = httpx.post(f"{server.url}/webhook", params={"api_key": KEY}, json=payload, timeout=10)
        else:
            reply = api.post(f"{server.url}/webhook", json=payload, timeout=10)
        assert reply.status_code == 202, reply.text
        body = reply.json()
        assert body["source"] == source and len(body["jobs"]) == 1
        assert body["jobs"][0]["path"] == str(files[source].resolve())
        ids[source] = body["jobs"][0]["id"]
    for source, job_id in ids.items():
        job = check_done(server, job_id)
        sidecar = files[source].with_name(files[source].stem + ".en.srt")  # Jellyfin/Plex: Show - S01E01.en.srt
        assert job["sidecars"] == [str(sidecar.resolve())]
        assert "every request" in words_of(sidecar.read_bytes())
    bad = api.post(f"{server.url}/webhook", json={"eventType": "Download", "series": {}}, timeout=10)
    assert bad.status_code == 422


def test_cancel_queued_and_running(server, setup):
    files = setup["files"]
    running = job_by_path(server, files["long"]).json()
    queued = job_by_path(server, files["queued"]).json()
    wait(server, running["id"], states=("running",))
    reply = api.delete(f"{server.url}/jobs/{queued['id']}", timeout=10)
    assert reply.status_code == 200 and reply.json()["state"] == "cancelled"
    reply = api.delete(f"{server.url}/jobs/{running['id']}", timeout=10)
    assert reply.status_code == 202 and reply.json()["cancel_requested"]
    job = wait(server, running["id"], timeout=60)
    assert job["state"] == "cancelled", job
    assert api.get(f"{server.url}/jobs/{job['id']}/result", timeout=10).status_code == 409
    assert wait(server, queued["id"])["state"] == "cancelled"  # never started
    assert not list(setup["library"].glob("long*.srt"))
    forget = api.delete(f"{server.url}/jobs/{queued['id']}", timeout=10)  # a finished job: removed
    assert forget.status_code == 200 and api.get(f"{server.url}/jobs/{queued['id']}").status_code == 404
    assert server.health()["status"] == "ok"


def test_jobs_survive_a_kill_and_a_stop(server, setup):
    files = setup["files"]
    running = job_by_path(server, files["long2"]).json()
    waiting = job_by_path(server, files["queued"]).json()  # its earlier job was cancelled and removed: a new one
    wait(server, running["id"], states=("running",))
    assert api.get(f"{server.url}/jobs/{waiting['id']}").json()["state"] == "queued"
    workers = psutil.Process(server.proc.pid).children(recursive=True)
    assert workers
    server.proc.kill()  # SIGKILL: the rows stay as they were, the worker is left alone
    server.proc.wait(10)
    gone, alive = psutil.wait_procs(workers, timeout=60)
    assert not alive, alive  # it saw its server gone and stopped at its next batch
    again = start(setup["root"] / "tmp2", setup["library"], setup["state"]).wait_ready()
    try:
        assert "1 job(s) interrupted by the last stop queued again" in again.stderr()
        for job_id in (running["id"], waiting["id"]):
            job = wait(again, job_id)
            assert job["state"] == "done", job
            words = words_of(api.get(f"{again.url}/jobs/{job_id}/result", timeout=10).content)
            assert ("library keeps every episode" if job_id == running["id"] else "every request") in words
        # SIGTERM: the running job stops and is queued again for the next start, the server exits with 0
        redo = api.post(f"{again.url}/jobs", json={"path": str(files["long2"]), "force": True}, timeout=10).json()
        assert redo["id"] == running["id"]
        wait(again, redo["id"], states=("running",))
        again.proc.send_signal(signal.SIGTERM)
        assert again.proc.wait(60) == 0, again.stderr()
        with Queue.open(setup["state"]) as queue:
            row = queue.get(redo["id"])
        assert row is not None and row.status is Status.QUEUED and row.interruptions == 2
    finally:
        again.stop()
