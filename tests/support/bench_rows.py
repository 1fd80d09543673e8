"""CPRT-Bench rows for tests: drawn from known boundaries, written as JSON Lines."""
from __future__ import annotations

import json
import random

from annotations import taxonomy
from scoring import engine


TRUE_BOUNDS = engine.Bounds((0.8745, 0.61, 0.33, 0.0))


def make_rows(n: int, bounds: engine.Bounds = TRUE_BOUNDS, seed: int = 1, tax=None) -> list[dict]:
    """n CPRT-Bench rows with random labels, level and score computed by the engine under `bounds`."""
    tax = tax or taxonomy.from_file()
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        p = rng.choice([0.03, 0.1, 0.25, 0.5])
        flat = {key: int(rng.random() < p) for key in tax.keys}
        counts = engine.level_counts(flat, tax.level_of)
        level, score = engine.severity(counts, bounds)
        rows.append(
            {
                "id": f"2017_{10000000 + i}",
                "binary_labels": {f"level{lv}": {k: flat[k] for k in tax.keys_of_level(lv)} for lv in engine.LEVELS},
                "level": level,
                "score": round(score, 6),
            }
        )
    return rows


def write_jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)
