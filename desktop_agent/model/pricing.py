"""Price table per model family and the cost of a reply from its usage (incl. prompt-cache reads/writes).

Prices are USD per million tokens (list prices; 5-minute cache writes cost 1.25× input, cache reads
0.1× input). A model id is matched to a family by the longest matching prefix pattern, so dated ids
(``claude-sonnet-4-5-20250929``) and aliases (``claude-sonnet-4-5``) price the same. An unknown
model is priced as Sonnet and flagged ``known=False`` so a front end can say the figure is an estimate.
``CostTracker`` keeps per-session totals across queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Price:
    input: float  # USD per million input tokens
    output: float
    cache_write: float
    cache_read: float


def _p(inp: float, out: float) -> Price:
    return Price(input=inp, output=out, cache_write=inp * 1.25, cache_read=inp * 0.1)


# (substring of the model id, price). First match in this order wins: most specific first.
PRICE_TABLE: list[tuple[str, Price]] = [
    ("opus-4-1", _p(15.0, 75.0)),
    ("opus-4-0", _p(15.0, 75.0)),
    ("opus-4-2025", _p(15.0, 75.0)),
    ("3-opus", _p(15.0, 75.0)),
    ("opus", _p(5.0, 25.0)),
    ("sonnet-4", _p(3.0, 15.0)),
    ("3-7-sonnet", _p(3.0, 15.0)),
    ("3-5-sonnet", _p(3.0, 15.0)),
    ("sonnet", _p(3.0, 15.0)),
    ("haiku-4", _p(1.0, 5.0)),
    ("3-5-haiku", _p(0.8, 4.0)),
    ("3-haiku", _p(0.25, 1.25)),
    ("haiku", _p(1.0, 5.0)),
]
DEFAULT_PRICE = _p(3.0, 15.0)


def price_for(model: str) -> tuple[Price, bool]:
    """(price, known) for a model id."""
    name = (model or "").lower()
    for pattern, price in PRICE_TABLE:
        if pattern in name:
            return price, True
    return DEFAULT_PRICE, False


def cost_usd(model: str, usage: dict[str, Any]) -> float:
    """The cost of one reply. ``input_tokens`` excludes cached tokens (as the API reports it)."""
    price, _ = price_for(model)

    def n(key: str) -> int:
        value = usage.get(key)
        return int(value or 0)

    return (
        n("input_tokens") * price.input
        + n("output_tokens") * price.output
        + n("cache_creation_input_tokens") * price.cache_write
        + n("cache_read_input_tokens") * price.cache_read
    ) / 1_000_000


@dataclass
class CostTracker:
    """Running totals for a session (or one query). ``add`` returns the cost of that reply."""

    cost_usd: float = 0.0
    usage: dict[str, int] = field(default_factory=lambda: {
        "input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
    })
    by_model: dict[str, float] = field(default_factory=dict)

    def add(self, model: str, usage: dict[str, Any]) -> float:
        cost = cost_usd(model, usage)
        self.cost_usd += cost
        self.by_model[model] = self.by_model.get(model, 0.0) + cost
        for key in self.usage:
            self.usage[key] += int(usage.get(key) or 0)
        return cost

    @property
    def total_tokens(self) -> int:
        return sum(self.usage.values())
