"""Rough cost estimates: a small per-model price table and token guesses. ESTIMATES, not invoices.

Prices are USD per million tokens (input, output) as published by the providers when this table was
written; they change, and batch/cached/priority tiers differ. Token counts at launch are guesses
(text ~4 characters per token; a fixed allowance per image); after a run, the tokens the providers
reported are used. Self-hosted vLLM costs no API fees (GPU time is not counted). Update the table
here when prices change; a model not in it shows "unknown" cost rather than a wrong number.
"""
from __future__ import annotations

from decimal import Decimal

# model-name prefix -> (USD per 1M input tokens, USD per 1M output tokens). Longest prefix wins.
PRICES: dict[str, dict[str, tuple[float, float]]] = {
    "openai": {
        "gpt-5.1": (1.25, 10.00),
        "gpt-5-mini": (0.25, 2.00),
        "gpt-5-nano": (0.05, 0.40),
        "gpt-5": (1.25, 10.00),
        "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1": (2.00, 8.00),
        "gpt-4o-mini": (0.15, 0.60),
        "gpt-4o": (2.50, 10.00),
    },
    "gemini": {
        "gemini-3-flash": (0.50, 3.00),
        "gemini-3-pro": (2.00, 12.00),
        "gemini-2.5-flash-lite": (0.10, 0.40),
        "gemini-2.5-flash": (0.30, 2.50),
        "gemini-2.5-pro": (1.25, 10.00),
    },
    "vllm": {"": (0.0, 0.0)},
    "onnx": {"": (0.0, 0.0)},  # a local classifier: no fee
}
PRICES_AS_OF = "2025-12 (list prices, standard tier)"

# Batch APIs (OpenAI Batch API, Gemini batch mode) bill this fraction of the standard price.
BATCH_PRICE_FACTOR = {"openai": 0.5, "gemini": 0.5, "vllm": 1.0}

# Launch-time guess of tokens per image (output tokens per stage: each kind's `output_tokens`).
IMAGE_TOKENS = {"openai": 800, "gemini": 600, "vllm": 1300, "onnx": 0}


def price_for(provider: str, model_name: str) -> tuple[float, float] | None:
    table = PRICES.get(provider, {})
    best = None
    for prefix, price in table.items():
        if model_name.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, price)
    return best[1] if best else None


def cost(provider: str, model_name: str, tokens_in: int, tokens_out: int, mode: str = "online") -> Decimal | None:
    price = price_for(provider, model_name)
    if price is None:
        return None
    factor = BATCH_PRICE_FACTOR.get(provider, 1.0) if mode == "batch" else 1.0
    usd = factor * (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
    return Decimal(str(round(usd, 4)))


def estimate(task: str, provider: str, model_name: str, n_images: int, prompt_text: dict, mode: str = "online") -> dict:
    """Requests, tokens and cost for a run over `n_images`, before it starts."""
    from .kinds import get

    kind = get(task)
    # Per item, from the kind: each stage's texts, the images with the first stage, and a later
    # stage's input grows by the earlier stage's answer (annotate's stage 2 sees stage 1's answer).
    per_in, per_out = kind.token_estimate(prompt_text, IMAGE_TOKENS.get(provider, 1000))
    requests = len(kind.stages) * n_images
    tokens_in, tokens_out = per_in * n_images, per_out * n_images
    online = cost(provider, model_name, tokens_in, tokens_out, "online")
    batch = cost(provider, model_name, tokens_in, tokens_out, "batch")
    usd = batch if mode == "batch" else online
    return {
        "mode": mode,
        "cost_online_usd": float(online) if online is not None else None,
        "cost_batch_usd": float(batch) if batch is not None else None,
        "images": n_images,
        "requests": requests,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "cost_usd": float(usd) if usd is not None else None,
        "price_per_million": price_for(provider, model_name),
        "prices_as_of": PRICES_AS_OF,
    }
