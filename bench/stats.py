"""Small statistics helpers shared by the in-process and the server measurements."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from typing import TypedDict


def percentile(values: Sequence[float], q: float) -> float:
    """Return the ``q``-th percentile (0-100, in steps of 0.1), linear between closest ranks.

    ``statistics.quantiles(..., n=1000, method="inclusive")``, with the ends and a single
    value answered directly (``quantiles`` needs two values and gives no 0th or 100th).

    Raises:
        ValueError: If ``values`` is empty or ``q`` is not within 0-100 in steps of 0.1.
    """
    if not values:
        msg = "percentile of an empty sequence"
        raise ValueError(msg)
    permille = round(q * 10) if isinstance(q, int | float) and not isinstance(q, bool) else -1
    if not 0 <= permille <= 1000 or abs(q * 10 - permille) > 1e-9:
        msg = "percentile q must be within 0-100 in steps of 0.1"
        raise ValueError(msg)
    if len(values) == 1 or permille in (0, 1000):
        return min(values) if permille == 0 else max(values)
    return statistics.quantiles(values, n=1000, method="inclusive")[permille - 1]


def latency_ms(seconds: Sequence[float]) -> dict[str, float]:
    """Summarize latencies given in seconds as p50, p95 and mean milliseconds."""
    if not seconds:
        return {}
    return {
        "p50": round(percentile(seconds, 50) * 1000, 3),
        "p95": round(percentile(seconds, 95) * 1000, 3),
        "mean": round(statistics.fmean(seconds) * 1000, 3),
    }


def mean_total(values: Sequence[int | float]) -> dict[str, float]:
    """Return the mean (rounded) and the total of per-query values."""
    total = sum(values)
    return {"mean": round(total / len(values), 3) if values else 0.0, "total": total}


BOOTSTRAP_RESAMPLES = 2000


class MedianCI(TypedDict):
    """A median and its 95% interval, ``[low, high]``."""

    median: float
    ci95: list[float]


def median_ci(
    values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> MedianCI:
    """Return the median and a percentile-bootstrap 95% interval of the median.

    Raises:
        ValueError: If ``values`` is empty.
    """
    if not values:
        msg = "median of an empty sequence"
        raise ValueError(msg)
    rng = random.Random(seed)
    items = list(values)
    medians = [statistics.median(rng.choices(items, k=len(items))) for _ in range(resamples)]
    return {
        "median": statistics.median(items),
        "ci95": [percentile(medians, 2.5), percentile(medians, 97.5)],
    }
