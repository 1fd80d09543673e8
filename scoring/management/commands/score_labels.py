"""Score CPRT-Bench style rows read as JSON Lines on stdin; write them back with level and score.

Rows are written back with their other fields, so each line must be JSON that can be written back as
it came: no NaN/Infinity (nor numbers too large to be finite), no escaped lone surrogates.
"""
from __future__ import annotations

import json
import math
import sys
import tempfile

from django.core.management.base import BaseCommand, CommandError

from annotations import taxonomy
from core import strictjson
from scoring import engine
from scoring.cprt_bench import MAX_LISTED_PROBLEMS, json_problem, score_row
from scoring.models import ScoringProfile


class Command(BaseCommand):
    help = (
        "Read JSON Lines on stdin (each row with nested binary_labels level1..level4) and write each row back on "
        "stdout with `level` and `score` computed by the engine. Nothing is written unless every row is valid."
    )
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("--profile", help="scoring profile name (default: the active profile)")
        parser.add_argument("--bounds", help="LO1,LO2,LO3: boundaries with 1 > LO1 > LO2 > LO3 > 0 (default: the profile's)")
        parser.add_argument(
            "--weights",
            help="W1,W2,W3,W4 (integers, W4 = 1, each above the largest sum of the less severe levels) or a named set: "
            + ", ".join(engine.WEIGHT_SETS) + " (default: the profile's)",
        )

    def handle(self, *args, profile=None, bounds=None, weights=None, **options):
        bounds_, weights = self._bounds(profile, bounds, weights)
        for example in engine.a6_check(bounds_, weights):
            self.stderr.write(f"A.6 check: {tuple(example['counts'])} -> {example['score']:.5f} (paper {example['paper']:.3f})")
        tax = taxonomy.active()
        stream = options.get("stdin") or sys.stdin
        stream = getattr(stream, "buffer", stream)
        problems = []
        # Rows go to a spooled file first, so a bad row late in the input leaves no partial output.
        with tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024, mode="w+", encoding="utf-8") as buffer:
            for number, raw in enumerate(stream, start=1):
                try:
                    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
                except UnicodeDecodeError:
                    problems.append(f"line {number}: not UTF-8")
                    continue
                if not text.strip():
                    continue
                try:
                    row = strictjson.loads(text)
                except (ValueError, RecursionError) as exc:
                    problems.append(f"line {number}: {json_problem(exc)}")
                    continue
                scored, row_problems = score_row(row, tax, bounds_, weights)
                if scored is None:
                    problems.extend(f"line {number}: {p}" for p in row_problems)
                    continue
                line = json.dumps(scored, ensure_ascii=False)
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:
                    problems.append(f"line {number}: a string holds an escaped lone surrogate (\\ud800-\\udfff), which is not text")
                    continue
                if not problems:
                    buffer.write(line + "\n")
            if problems:
                listed = problems[:MAX_LISTED_PROBLEMS]
                more = f"\n  ... and {len(problems) - len(listed)} more" if len(problems) > len(listed) else ""
                raise CommandError(f"{len(problems)} bad row(s), nothing was written:\n  " + "\n  ".join(listed) + more)
            buffer.seek(0)
            for line in buffer:
                self.stdout.write(line, ending="")

    def _bounds(self, profile_name, bounds_text, weights_text=None) -> tuple[engine.Bounds, list[int]]:
        """The profile's boundaries and weights, each replaced by --bounds / --weights when given."""
        bounds = weights = None
        if bounds_text is not None:
            parts = bounds_text.split(",")
            try:
                values = [float(p) for p in parts]
            except ValueError:
                raise CommandError(f"--bounds {bounds_text!r}: expected three numbers LO1,LO2,LO3.") from None
            if len(values) != 3 or not all(math.isfinite(v) for v in values):
                raise CommandError(f"--bounds {bounds_text!r}: expected three finite numbers LO1,LO2,LO3.")
            try:
                bounds = engine.Bounds.from_inner(*values)
            except ValueError as exc:
                raise CommandError(f"--bounds {bounds_text!r}: {exc}") from None
        if weights_text is not None:
            weights = self._weights(weights_text)
        if bounds is not None and weights is not None:
            return bounds, weights
        profile_bounds, profile_weights = self._profile(profile_name)
        return bounds or profile_bounds, weights or profile_weights

    def _weights(self, text: str) -> list[int]:
        if text in engine.WEIGHT_SETS:
            return list(engine.WEIGHT_SETS[text])
        try:
            values = [float(p) for p in text.split(",")]
        except ValueError:
            raise CommandError(f"--weights {text!r}: expected four integers W1,W2,W3,W4 or one of {', '.join(engine.WEIGHT_SETS)}.") from None
        if len(values) != 4 or not all(math.isfinite(v) for v in values):
            raise CommandError(f"--weights {text!r}: expected four finite integers W1,W2,W3,W4.")
        try:
            return list(engine.check_weights(values))
        except ValueError as exc:
            raise CommandError(f"--weights {text!r}: {exc}") from None

    def _profile(self, profile_name) -> tuple[engine.Bounds, list[int]]:
        if profile_name is not None:
            profile = ScoringProfile.objects.filter(name=profile_name).first()
            if profile is None:
                raise CommandError(f"No scoring profile named {profile_name!r}.")
        else:
            profile = ScoringProfile.active()
        if profile.provisional:
            self.stderr.write(f"Note: scoring with {profile.label}.")
        return profile.bounds, list(profile.weights or engine.WEIGHTS)
