"""Out-of-memory backoff: run work in batches; on an accelerator OOM halve the batch and retry, down to 1, then
move to the CPU. No item is lost or done twice: a batch's results are kept only when the whole batch succeeded.

Pure logic, no torch import: an OOM is recognised by its exception type name (``torch.OutOfMemoryError``, which
``torch.cuda.OutOfMemoryError`` aliases, raised by CUDA and ROCm) or by the "out of memory" message of the
``RuntimeError`` that MPS raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


def is_out_of_memory(error: BaseException) -> bool:
    """True for an accelerator out-of-memory error (CUDA, ROCm, MPS), False for anything else."""
    if any(cls.__name__ == "OutOfMemoryError" for cls in type(error).__mro__):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


class BatchRunner:
    """Runs ``run(items) -> results`` (one result per item, same order) over batches, with OOM backoff.

    ``batch_size`` is the starting size; after an OOM it stays halved for the rest of this runner's life, so
    later batches do not hit the same wall. When a batch of 1 still runs out of memory, ``to_cpu()`` is called
    once (it moves the model to the CPU and returns the batch size to use there) and the work goes on on the
    CPU; ``to_cpu=None`` re-raises instead.
    ``release()`` runs after every OOM (``torch.cuda.empty_cache``). Errors that are not OOM propagate as is.
    """

    def __init__(
        self,
        batch_size: int,
        *,
        to_cpu: Callable[[], int] | None = None,
        release: Callable[[], None] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.on_cpu = False
        self._to_cpu = to_cpu
        self._release = release

    def run(self, items: Sequence[T], run: Callable[[list[T]], list[R]]) -> list[R]:
        """Results of ``run`` for all ``items``, in order. Raises ``RuntimeError`` when ``run`` returns a wrong
        number of results, and the OOM itself when there is no way left to shrink."""
        results: list[R] = []
        i = 0
        while i < len(items):
            group = list(items[i : i + self.batch_size])
            try:
                out = run(group)
            except Exception as error:  # noqa: BLE001 - only OOM is handled, the rest is re-raised
                if not is_out_of_memory(error):
                    raise
                if self._release is not None:
                    self._release()
                self._shrink(len(group), error)
                continue
            if len(out) != len(group):
                raise RuntimeError(f"batch of {len(group)} gave {len(out)} results")
            results.extend(out)
            i += len(group)
        return results

    def _shrink(self, size: int, error: BaseException) -> None:
        if size > 1:
            self.batch_size = max(1, size // 2)
            log.warning("out of memory with a batch of %d; retrying with %d (%s)", size, self.batch_size, error)
            return
        if self._to_cpu is None or self.on_cpu:
            raise error
        log.warning("out of memory with a batch of 1; moving the model to the CPU (%s)", error)
        self.batch_size = max(1, self._to_cpu())
        self.on_cpu = True
