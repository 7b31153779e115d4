"""The median filter of openai-whisper's word timing on the CPU, as one numba loop (cached on disk like the DTW).

``whisper.timing.median_filter`` takes the median of every 7 frames of the alignment heads' attention weights by
unfolding the tensor into 7-wide windows and sorting each (``x.unfold(-1, 7, 1).sort()``): for a 30-s window of base,
6 heads x about 110 tokens x 1500 frames, that is about 70 ms on two cores, most of the word-timing stage. A
selection over 7 values per output in a compiled loop gives the same numbers (a median picks one of the inputs; no
arithmetic) in a few milliseconds: 4.9 ms against whisper's 79 ms on that shape, where SciPy's
``ndimage.median_filter`` (``mode="mirror"``, the same numbers) took 84 ms, so no library does it faster. Imported
only when word timing is set up: it imports numba, which ``whisper.timing`` imports anyway.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always")
def _low(a, b):  # noqa: ANN001, ANN202 - scalars of one float dtype
    """``min(a, b)`` as Python answers it (``a`` on a tie), written as the select that compiles to a vector min."""
    return b if b < a else a


@numba.njit(inline="always")
def _high(a, b):  # noqa: ANN001, ANN202 - scalars of one float dtype
    """``max(a, b)`` as Python answers it (``a`` on a tie), written as the select that compiles to a vector max."""
    return b if b > a else a


@numba.njit(inline="always")
def _median_7(v0, v1, v2, v3, v4, v5, v6):  # noqa: ANN001, ANN202 - scalars of one float dtype
    """The 4th smallest of 7 values, branch-free (min and max only): Knuth's 16-comparator sorting network for 7
    values (The Art of Computer Programming, vol. 3, 5.3.4), whose sorted middle is the median."""
    v0, v6 = _low(v0, v6), _high(v0, v6)
    v2, v3 = _low(v2, v3), _high(v2, v3)
    v4, v5 = _low(v4, v5), _high(v4, v5)
    v0, v2 = _low(v0, v2), _high(v0, v2)
    v1, v4 = _low(v1, v4), _high(v1, v4)
    v3, v6 = _low(v3, v6), _high(v3, v6)
    v0, v1 = _low(v0, v1), _high(v0, v1)
    v2, v5 = _low(v2, v5), _high(v2, v5)
    v3, v4 = _low(v3, v4), _high(v3, v4)
    v1, v2 = _low(v1, v2), _high(v1, v2)
    v4, v6 = _low(v4, v6), _high(v4, v6)
    v2, v3 = _low(v2, v3), _high(v2, v3)
    v4, v5 = _low(v4, v5), _high(v4, v5)
    v1, v2 = _low(v1, v2), _high(v1, v2)
    v3, v4 = _low(v3, v4), _high(v3, v4)
    return v3


@numba.njit(cache=True, nogil=True)
def _median_reflected(row, j, width, window):  # noqa: ANN001, ANN202 - one row, a frame index, scratch space
    """The median of the ``width`` frames around frame ``j`` of ``row``, the ends reflected, by insertion sort."""
    m = row.shape[0]
    pad = width // 2
    for k in range(width):
        i = j + k - pad
        if i < 0:
            i = -i
        elif i >= m:
            i = 2 * (m - 1) - i
        window[k] = row[i]
    for a in range(1, width):  # insertion sort
        v = window[a]
        b = a - 1
        while b >= 0 and window[b] > v:
            window[b + 1] = window[b]
            b -= 1
        window[b + 1] = v
    return window[pad]


@numba.njit(cache=True, nogil=True)
def median_rows(rows: np.ndarray, width: int) -> np.ndarray:
    """The median of each ``width``-wide window (odd) along the last axis of ``rows`` (2-D, frames > width // 2), the
    ends reflected without repeating the edge (``torch.nn.functional.pad(mode="reflect")``, as whisper pads): an
    array of ``rows``'s shape and dtype. Width 7 (whisper's ``medfilt_width``) goes through a sorting network, in
    a loop of its own over the frames that need no reflection (one the compiler turns into vector min and max
    instructions), other widths and the frames at the ends through an insertion sort. Rows with NaN must not come
    here (the order of NaN differs from torch's sort)."""
    n, m = rows.shape
    out = np.empty_like(rows)
    window = np.empty(width, dtype=rows.dtype)
    for r in range(n):
        row = rows[r]
        target = out[r]
        if width == 7:
            for j in range(3, m - 3):
                target[j] = _median_7(row[j - 3], row[j - 2], row[j - 1], row[j], row[j + 1], row[j + 2], row[j + 3])
            for j in range(min(3, m)):
                target[j] = _median_reflected(row, j, width, window)
            for j in range(max(3, m - 3), m):
                target[j] = _median_reflected(row, j, width, window)
        else:
            for j in range(m):
                target[j] = _median_reflected(row, j, width, window)
    return out
