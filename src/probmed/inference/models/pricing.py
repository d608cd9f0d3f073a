"""Token prices -> cost per answer, from the configurable table in models.yaml (`pricing:`).

Prices change and differ per gateway, so they are data, not code: USD per
million prompt and completion tokens, looked up by the API model id (exact
match first, then the longest table key the id starts with, so
"gpt-4o-2024-08-06" finds "gpt-4o"). Unknown models cost 0 and say so once.
"""

from __future__ import annotations

import logging
from typing import Mapping

from probmed.core.params_schema import Pricing

log = logging.getLogger(__name__)
_warned: set[str] = set()


def price_for(model_id: str, table: Mapping[str, Pricing] | None) -> tuple[float, float]:
    """(USD per 1M prompt tokens, USD per 1M completion tokens) for `model_id` (params ``pricing``)."""
    table = dict(table or {})
    entry = table.get(model_id)
    if entry is None:
        matches = [k for k in table if model_id.startswith(k)]
        entry = table[max(matches, key=len)] if matches else None
    if entry is None:
        if model_id not in _warned:
            _warned.add(model_id)
            log.warning("no price for model %r in the pricing table; cost counted as 0", model_id)
        return 0.0, 0.0
    return float(entry.input_per_mtok), float(entry.output_per_mtok)


def cost_usd(model_id: str, prompt_tokens: int, completion_tokens: int, table: Mapping[str, Pricing] | None) -> float:
    """USD for one answer's tokens at the model's prices."""
    p_in, p_out = price_for(model_id, table)
    return (prompt_tokens * p_in + completion_tokens * p_out) / 1_000_000
