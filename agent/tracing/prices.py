"""Model prices, for the dollars a stop saved: a small table, overridable by the user.

:data:`PRICES` holds USD per million input and output tokens for the Groq model the project
names (Groq's on-demand price for ``llama-3.3-70b-versatile``). ``AGENT_MODEL_PRICES``, a
JSON object such as ``{"offline": [0.59, 0.79]}``, adds or replaces entries. A model with no
price has none: :func:`price_of` returns None and the dollars stay absent, never zero.
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping

PRICES_VAR = "AGENT_MODEL_PRICES"
PRICES: dict[str, tuple[float, float]] = {"llama-3.3-70b-versatile": (0.59, 0.79)}
"""USD per million (input, output) tokens, by the model name replies report."""


class PriceError(ValueError):
    """``AGENT_MODEL_PRICES`` is not a JSON object of ``[input, output]`` prices."""


def _is_price(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def read_prices(environ: Mapping[str, str] = os.environ) -> dict[str, tuple[float, float]]:
    """Return :data:`PRICES` with ``AGENT_MODEL_PRICES`` applied.

    Raises:
        PriceError: Naming the variable and the entry at fault, never quoting the value.
    """
    return dict(_prices(environ.get(PRICES_VAR, "").strip()))


@functools.lru_cache(maxsize=8)  # read at every model call and tool step: parsed once
def _prices(raw: str) -> dict[str, tuple[float, float]]:
    if not raw:
        return dict(PRICES)
    try:
        given = json.loads(raw)
    except ValueError:
        raise PriceError(f"{PRICES_VAR} must be a JSON object") from None
    if not isinstance(given, dict):
        raise PriceError(f"{PRICES_VAR} must be a JSON object, not {type(given).__name__}")
    prices = dict(PRICES)
    for index, (model, pair) in enumerate(given.items()):
        if not (isinstance(pair, list) and len(pair) == 2 and all(map(_is_price, pair))):
            msg = (
                f"{PRICES_VAR}: entry {index + 1} must be [input, output], two non-negative "
                "USD prices per million tokens"
            )
            raise PriceError(msg)
        prices[model] = (float(pair[0]), float(pair[1]))
    return prices


def price_of(model: str | None) -> tuple[float, float] | None:
    """Return the (input, output) USD per million tokens of ``model``, or None if unknown."""
    if model is None:
        return None
    return _prices(os.environ.get(PRICES_VAR, "").strip()).get(model)


def usd(input_tokens: int, output_tokens: int, price: tuple[float, float]) -> float:
    """Return what the tokens cost at ``price``, rounded to a millionth of a dollar."""
    return round((input_tokens * price[0] + output_tokens * price[1]) / 1_000_000, 6)
