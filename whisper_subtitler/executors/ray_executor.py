"""``--executor ray``: a batch spread over Ray actors (``ray_worker.FileWorker``), one per GPU or one per
``--cpus-per-worker`` cores, on the cluster that ``--ray-address`` names or on a local one started for the run.

The driver (this process) keeps the local runner's contract. It decides which files are skipped, hands one file at a
time to each free worker, writes each file's outputs itself as soon as the file ends, atomically and without
clobbering (``outputs.write_files``), and yields the file's result to ``runner.run_batch``, which reports it, counts
it in the progress display and keeps it for the ``--json`` summary. A worker that dies in the middle of a file
(killed, out of memory, its machine lost) is restarted by Ray, and the file goes back to the head of the queue for
the next free worker, ``MAX_ATTEMPTS`` times in all; then it fails with the reason. Ctrl-C kills the workers: as
they write nothing, nothing is left half-written.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
from collections import Counter, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from whisper_subtitler.errors import ExitCode, InputError, MissingRequirementError, SubtitlerError
from whisper_subtitler.executors.ray_worker import Fatal, FileWorker, PlatformArgs, Rendered, WorkerInfo
from whisper_subtitler.outputs import write_files
from whisper_subtitler.pipeline import Pipeline
from whisper_subtitler.progress import ProgressDisplay
from whisper_subtitler.results import FileResult, FileStatus

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # tries of one file whose worker dies under it, the first one included
WORKER_RESTARTS = 3  # times Ray restarts a worker that died (each restart loads the models again)
DEFAULT_CPUS_PER_WORKER = 4  # a CPU worker's cores: Whisper's matrix products gain little past 4 threads
LOCAL_OBJECT_STORE_BYTES = 256 * 2**20  # a local cluster's shared memory: results are a few kB of subtitles


@dataclass(frozen=True)
class RayOptions:
    """``--ray-address`` (``None``: start a local cluster), ``--devices`` (the GPUs of this host that a local cluster
    uses; ``None``: all), ``--cpus-per-worker``; ``use_gpus`` false when the CPU backend was asked for;
    ``log_to_driver``: the workers' own log lines on stderr (``-v``)."""

    address: str | None = None
    devices: tuple[int, ...] | None = None
    cpus_per_worker: int = DEFAULT_CPUS_PER_WORKER
    use_gpus: bool = True
    log_to_driver: bool = False


@dataclass(frozen=True)
class WorkerShape:
    """How many workers to start and what each one reserves (Ray resources: cores, GPUs)."""

    count: int
    cpus: float
    gpus: float


def worker_shape(resources: Mapping[str, float], cpus_per_worker: int, use_gpus: bool) -> WorkerShape:
    """The workers for a cluster with ``resources`` (``ray.cluster_resources()``): one per GPU (with one core), or,
    without GPUs (or ``use_gpus`` false), one per ``cpus_per_worker`` cores, at least one."""
    gpus = int(resources.get("GPU", 0)) if use_gpus else 0
    if gpus:
        return WorkerShape(gpus, 1, 1)
    cpus = max(1, int(resources.get("CPU", 1)))
    per_worker = max(1, min(cpus_per_worker, cpus))
    return WorkerShape(max(1, cpus // per_worker), per_worker, 0)


class RayExecutor:
    """Runs a batch's files on Ray workers (``runner.Executor``); a context manager that stops them on exit.

    ``pipeline`` is the driver's (its models are not loaded: it decides skips and output paths); ``platform_args``
    are the device options each worker resolves on its own machine.
    """

    def __init__(self, pipeline: Pipeline, options: RayOptions, platform_args: PlatformArgs) -> None:
        self.pipeline = pipeline
        self.options = options
        self.platform_args = platform_args
        self._ray: Any = None
        self._actors: list[Any] = []
        self._sigterm: Any = None

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def results(self, sources: Sequence[Path], progress: ProgressDisplay) -> Iterator[FileResult]:
        """Each source's result as its file ends (skipped files first), its outputs written. Raises
        ``MissingRequirementError`` when Ray is missing or the cluster cannot be reached, and a worker's error that
        ends the batch (a bad ``--model``) with its own message and exit code."""
        queue: deque[Path] = deque()
        for source in sources:
            skipped = self._skipped(source)
            if skipped is not None:
                yield skipped
            else:
                queue.append(source)
        if not queue:
            return
        try:
            yield from self._run(queue, progress)
        finally:
            self.close()  # also on Ctrl-C: the workers are killed, and they write nothing

    def _run(self, queue: deque[Path], progress: ProgressDisplay) -> Iterator[FileResult]:
        ray = self._connect()
        from ray.exceptions import RayActorError

        actors = self._actors = self._start_workers(ray, len(queue))
        info: dict[int, WorkerInfo] = {}
        pending: dict[Any, tuple[int, Path | None]] = {a.ready.remote(): (i, None) for i, a in enumerate(actors)}
        deaths: Counter[int] = Counter()
        attempts: Counter[Path] = Counter()
        while queue or any(source is not None for _, source in pending.values()):
            if not pending:  # every worker died more often than Ray restarts it
                for left in queue:
                    yield _failed(left, "no Ray worker is left to process it")
                return
            [ref], _ = ray.wait(list(pending), num_returns=1)
            worker, source = pending.pop(ref)
            try:
                outcome = ray.get(ref)
            except RayActorError as error:
                deaths[worker] += 1
                reason = f"{_worker_name(info.get(worker))} died: {_death_reason(error)}"
                if source is not None:
                    attempts[source] += 1
                    if attempts[source] >= MAX_ATTEMPTS:
                        yield _failed(source, f"its Ray worker died {attempts[source]} times ({reason})")
                    else:
                        log.warning(
                            "%s: %s; trying again (%d of %d)", source, reason, attempts[source] + 1, MAX_ATTEMPTS
                        )
                        queue.appendleft(source)
                if deaths[worker] <= WORKER_RESTARTS:
                    pending[actors[worker].ready.remote()] = (worker, None)  # Ray restarts it: wait till it is back
                continue
            if isinstance(outcome, WorkerInfo):
                info[worker] = outcome
                log.info("Ray %s is ready", _worker_name(outcome))
                outcome = outcome.fatal
            if isinstance(outcome, Fatal):
                raise outcome.error()
            if isinstance(outcome, Rendered) and source is not None:
                yield self._write(source, outcome)
            if queue:
                following = queue.popleft()
                progress.start_file(following)
                pending[actors[worker].process.remote(str(following))] = (worker, following)

    def _skipped(self, source: Path) -> FileResult | None:
        """``Pipeline.skipped``; a bad output name is left for the worker to report as the local run does."""
        try:
            return self.pipeline.skipped(source)
        except InputError:
            return None

    def _write(self, source: Path, rendered: Rendered) -> FileResult:
        """The worker's result for ``source`` with its outputs written here (``outputs.write_files``)."""
        result = replace(rendered.result, source=source)
        if result.status is not FileStatus.DONE:
            return result
        try:
            targets = self.pipeline.outputs_for(source)  # the subtitle files: no video copies under Ray
            written, kept = write_files(list(zip(targets, rendered.files)), overwrite=self.pipeline.options.overwrite)
        except InputError as error:
            return FileResult.failed(source, error)
        return replace(result, outputs=tuple(written), skipped_outputs=tuple(kept))

    def _connect(self) -> Any:
        """Join the cluster at ``options.address``, or start a local one: quiet, no dashboard, no usage statistics."""
        try:
            import ray
        except ImportError:
            raise MissingRequirementError(
                "--executor ray needs Ray", hint='pip install "whisper-subtitler[ray]"'
            ) from None
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        o = self.options
        settings: dict[str, Any] = dict(
            include_dashboard=False, logging_level=logging.ERROR, log_to_driver=o.log_to_driver
        )
        if o.address is None:
            settings["object_store_memory"] = LOCAL_OBJECT_STORE_BYTES
            if o.devices is not None:
                settings["num_gpus"] = len(o.devices)
                os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, o.devices))  # the GPUs the workers may use
        _ray_messages_to_stderr(keep_raylet=o.log_to_driver)
        self._sigterm = signal.getsignal(signal.SIGTERM)
        try:
            ray.init(address=o.address, **settings)
        except (ConnectionError, RuntimeError, ValueError) as error:
            where = f"join the Ray cluster at {o.address}" if o.address else "start a local Ray cluster"
            raise MissingRequirementError(f"cannot {where}: {error}") from None
        finally:
            # ray.init sets its own SIGTERM handler: keep the one the run had, or, instead of the default (the
            # process killed at once, a local cluster's processes left running), exit through the clean-up.
            default = self._sigterm in (signal.SIG_DFL, None)
            _set_sigterm(_exit_through_cleanup if default else self._sigterm)
        self._ray = ray
        return ray

    def _start_workers(self, ray: Any, files: int) -> list[Any]:
        shape = worker_shape(ray.cluster_resources(), self.options.cpus_per_worker, self.options.use_gpus)
        count = min(shape.count, files)
        log.info("Ray: %d worker(s), each with %g core(s) and %g GPU(s)", count, shape.cpus, shape.gpus)
        worker = ray.remote(FileWorker).options(
            num_cpus=shape.cpus, num_gpus=shape.gpus, max_restarts=WORKER_RESTARTS, max_task_retries=0
        )
        # The workers get the run options; each chooses its own device (the driver's choice stays here).
        return [worker.remote(self.pipeline.options, self.platform_args, os.getcwd()) for _ in range(count)]

    def close(self) -> None:
        """Kill the workers and leave the cluster (a local one stops); safe to call twice."""
        if self._ray is None:
            return
        ray, self._ray = self._ray, None
        for actor in self._actors:
            ray.kill(actor, no_restart=True)
        self._actors = []
        ray.shutdown()
        _set_sigterm(self._sigterm)


def _set_sigterm(handler: Any) -> None:
    if handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def _exit_through_cleanup(signum: int, frame: object) -> None:
    """SIGTERM during a Ray run: exit with 128 + 15 through the ``finally`` blocks, which stop the workers and a
    local cluster."""
    raise SystemExit(128 + signum)


def _ray_messages_to_stderr(keep_raylet: bool) -> None:
    """Send what Ray's driver prints, its workers' log lines (``-v``) and its own account of a worker's death, to
    stderr, not stdout, which carries data only; that account is dropped unless ``keep_raylet``: the driver logs
    its own line. Ray 2.x prints both through ``ray._private.worker.print_to_stdstream``; without it, nothing
    changes."""
    from ray._private import worker

    original = getattr(worker, "print_to_stdstream", None)
    if original is None:
        return
    original = getattr(original, "__wrapped__", original)

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        if keep_raylet or data.get("pid") != "raylet":
            original({**data, "is_err": True}, ignore_prefix)

    to_stderr.__wrapped__ = original  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


def _failed(source: Path, reason: str) -> FileResult:
    return FileResult(source=source, status=FileStatus.FAILED, error=f"{source}: {reason}", exit_code=ExitCode.FAILED)


def _worker_name(info: WorkerInfo | None) -> str:
    return f"worker (pid {info.pid} on {info.host})" if info is not None else "worker"


def _death_reason(error: SubtitlerError | Exception) -> str:
    """One line from Ray's long account of a worker's death: its exit detail when given, else its first sentence."""
    text = " ".join(re.sub(r"The actor \w+ is unavailable: ", "", str(error)).split())
    detail = re.search(r"Worker exit detail: (.+?\.)(?: |$)", text)
    first = detail.group(1) if detail else re.split(r"(?<=\.) ", text, maxsplit=1)[0]
    return f"{type(error).__name__}: {first[:200]}"
