"""What a run's totals must be, counted from its stored results by hand (no ORM aggregate, so that the
count is independent of inference.lifecycle.refresh_totals, which the seeded and launched runs use)."""
from __future__ import annotations

from collections import Counter
from decimal import Decimal

from inference import pricing
from inference.models import Run


def counted_totals(run: Run) -> dict:
    results = list(run.results.all())
    tokens_in, tokens_out = sum(r.tokens_in for r in results), sum(r.tokens_out for r in results)
    cost = pricing.cost(run.provider, run.model_name, tokens_in, tokens_out, run.mode)
    return {"outcome_counts": dict(Counter(r.outcome for r in results)), "done": len(results), "tokens_in": tokens_in,
            "tokens_out": tokens_out, "estimated_cost_usd": cost if cost is not None else Decimal(0)}


def stored_totals(run: Run) -> dict:
    run.refresh_from_db()
    return {"outcome_counts": run.outcome_counts, "done": run.done, "tokens_in": run.tokens_in, "tokens_out": run.tokens_out,
            "estimated_cost_usd": run.estimated_cost_usd}
