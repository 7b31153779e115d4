"""uvicorn running the application, stopped as a service manager expects.

The first SIGTERM or SIGINT stops the server gracefully: it closes its socket (new connections are refused),
answers requests still waiting in the queue with 503, lets the running jobs finish and send their replies, then
returns, and the command exits with 0. Asynchronous jobs (``async_jobs``) are stopped instead and queued again:
they run on the next start. A second signal cancels the running jobs (each stops at its next stage or
batch) and stops at once. uvicorn's own handling would raise the signal again after its shutdown and so end with
143; ``Server.capture_signals`` replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from types import FrameType

import uvicorn

from whisper_subtitler.errors import UsageError
from whisper_subtitler.serve.app import ServeOptions, Service, create_app
from whisper_subtitler.serve.workers import WorkerSettings, start_workers

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Server(uvicorn.Server):
    """``uvicorn.Server`` with the signal handling above; ``service`` is the application's."""

    def __init__(self, config: uvicorn.Config, service: Service) -> None:
        super().__init__(config)
        self.service = service
        self.loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        jobs, queue = self.service.jobs, self.service.queue
        dispatchers = [asyncio.ensure_future(jobs.dispatch(queue)) for _ in queue.workers] if jobs else []
        try:
            await super().serve(sockets)
        finally:
            for task in dispatchers:
                task.cancel()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
            yield
            return
        previous = {sig: signal.signal(sig, self.stop) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def stop(self, signum: int, frame: FrameType | None = None) -> None:
        """A stop signal: the first stops gracefully, the second at once (see the module docstring)."""
        queue = self.service.queue
        if self.should_exit:
            log.warning("%s again: cancelling the running jobs", signal.Signals(signum).name)
            self.force_exit = True
            queue.cancel_running()
        else:
            log.warning(
                "%s: stopping; %d running job(s) finish, %d waiting request(s) are refused (a second signal cancels)",
                signal.Signals(signum).name,
                queue.counts.running,
                queue.counts.waiting,
            )
            self.should_exit = True
        if self.service.jobs is not None:  # asynchronous jobs stop now and are queued again for the next start
            self.service.jobs.interrupt()
        if self.loop is not None:
            self.loop.call_soon_threadsafe(queue.close)


def start_jobs(service: Service, state_dir: Path, name_template: str) -> None:
    """Run the asynchronous jobs of ``state_dir`` in ``service`` (``async_jobs.open_jobs``): left off, with a
    warning, when another server runs them. Raises ``SubtitlerError`` when the queue cannot be opened."""
    from whisper_subtitler.serve.async_jobs import open_jobs

    service.jobs = open_jobs(state_dir, service.template_changes, name_template)


def start_service(workers: int, settings: WorkerSettings, options: ServeOptions) -> Service:
    """The ``Service`` of ``workers`` worker processes loaded with ``settings`` (``workers.start_workers``).
    Raises what loading raises."""
    from whisper_subtitler.api import Subtitler

    pool = start_workers(workers, settings)
    speakers = replace(settings.speakers, diarize=pool[0].info["diarize"])
    try:
        template = Subtitler(
            decoding=settings.decoding, speakers=speakers, device=settings.device, load=False, check_speakers=False
        )
    except BaseException:
        for worker in pool:
            worker.stop()
        raise
    return Service(pool, template, options)


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (uvicorn listens on it); raises ``UsageError`` (exit 2) when it cannot
    be bound (the port in use, an address this machine does not have)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port}: {e.strerror or e}", hint="choose another --host or --port"
        ) from None
    return sock


def run_server(service: Service, sock: socket.socket, *, log_level: int = logging.INFO) -> None:
    """Serve ``service`` on the bound socket ``sock`` (``listen``) until a stop signal; returns when every job has
    ended. Logs (uvicorn's included, one line per request) go to the ``logging`` handlers the caller set up, at
    ``log_level``."""
    logging.getLogger("uvicorn").setLevel(log_level)
    config = uvicorn.Config(
        create_app(service),
        log_config=None,  # the caller's handlers (stderr), not uvicorn's (its access log goes to stdout)
        lifespan="off",
        server_header=False,
    )
    try:
        Server(config, service).run(sockets=[sock])
    finally:
        service.queue.cancel_running()  # only a forced stop leaves jobs running here
        service.queue.shutdown()
        if service.jobs is not None:
            service.jobs.stop()
        for worker in service.queue.workers:
            worker.stop()
