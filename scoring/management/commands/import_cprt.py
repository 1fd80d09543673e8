"""Import CPRT-Bench rows (JSON list, JSON Lines or parquet), fit the profile's boundaries, rescore."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from scoring import cprt_bench


class Command(BaseCommand):
    help = (
        "Import CPRT-Bench rows (id, binary_labels, level, score) from .json, .jsonl or .parquet. The whole file is "
        "validated first and refused with every problem listed; nothing is written unless every row is valid."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--split", required=True, choices=cprt_bench.SPLITS, help="split of images created by this import")
        parser.add_argument("--profile", default=cprt_bench.DEFAULT_PROFILE, help="scoring profile to fit (default: %(default)s)")
        parser.add_argument("--set-consensus", action="store_true", help=(
            "make the imported ground truth the profile's consensus set (otherwise an existing profile keeps its own)"))

    def handle(self, *args, file, split, profile, set_consensus=False, **options):
        try:
            result = cprt_bench.import_bench_file(file, split, profile, set_consensus=set_consensus)
        except (cprt_bench.BenchFileError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        out = self.stdout
        fit = result.fit
        out.write(f"Imported {result.rows} rows from {file}: {result.images_created} images created, {result.images_updated} updated.")
        if result.split_differs:
            out.write(f"{len(result.split_differs)} existing images keep their own split (not {split}): {', '.join(result.split_differs[:20])}"
                      + (" ..." if len(result.split_differs) > 20 else ""))
        splits = ", ".join(f"{r['split']} {r['rows']}" for r in result.per_split)
        out.write(f"Profile fitted from every stored published row of its ground truth: {result.fitted_rows} rows "
                  f"({splits}), not from this file alone.")
        for r in result.per_split:
            resid = "-" if r["max_residual"] is None else f"{r['max_residual']:.3g}"
            out.write(f"  split {r['split']}: {r['rows']} rows, largest residual {resid} (tolerance {r['tolerance']:.3g}), "
                      + ("reproduced" if r["reproduces"] else f"NOT reproduced ({r['failing_rows']} rows outside the tolerance)"))
        for level_fit in fit.levels:
            out.write(
                f"  level {level_fit.level}: {level_fit.rows} rows, {level_fit.distinct_t} distinct t, "
                f"lo={_num(level_fit.lo)} hi={_num(level_fit.hi)} residual={_num(level_fit.max_residual)}"
            )
        joint = result.joint
        precision = f"{joint.decimals} decimals" if joint.decimals is not None else "full precision"
        out.write(f"Scores printed with {precision}: tolerance {joint.tolerance:.3g} on the largest residual.")
        if joint.bounds is not None:
            lo = joint.bounds.lo
            out.write(f"Fitted weights: {joint.weight_set} {list(joint.weights)} ({joint.tried} weight sets tried)")
            out.write(f"Fitted boundaries: lo1={lo[0]:.6f} lo2={lo[1]:.6f} lo3={lo[2]:.6f} lo4=0")
            out.write(f"Largest residual of the profile against the published scores: {joint.max_residual:.3g}")
            if joint.indistinguishable:
                out.write("The rows cannot tell these weight sets apart (each reproduces the file): "
                          + ", ".join(c.name for c in joint.candidates))
            for example in joint.report()["a6"]:
                out.write(f"A.6 check: {tuple(example['counts'])} -> {example['score']:.5f} (paper {example['paper']:.3f})")
        for problem in joint.problems:
            out.write(self.style.WARNING(f"Fit problem: {problem}"))
        for name, gap in fit.partition_gaps.items():
            out.write(f"  partition gap {name}: {gap:.3g}")
        if result.mismatches:
            out.write(self.style.WARNING(f"Rows whose published level differs from the computed l* ({len(result.mismatches)}):"))
            for m in result.mismatches:
                out.write(f"  {m['id']}: published {m['published']}, computed {m['computed']}")
        else:
            out.write("Every published level equals the computed l*.")
        profile = result.profile
        before = result.previous_active or "none"
        if result.activated:
            out.write(self.style.SUCCESS(f"Profile {profile.label} is now the active profile (before: {before})."))
        else:
            out.write(self.style.WARNING(f"Profile {profile.label} is PROVISIONAL and was NOT activated: {result.not_activated_reason}."))
            out.write(f"Active profile before: {before}; now: {result.active_now or 'none (the oldest profile is used)'}.")
        c = result.consensus
        after = ", ".join(c["after"]) or "empty"
        if c["created"]:
            out.write(f"Consensus set of the new profile: {after}.")
        elif c["changed"]:
            out.write(self.style.WARNING(f"Consensus set changed (--set-consensus): {', '.join(c['before']) or 'empty'} -> {after}."))
        else:
            hint = "" if set_consensus else " (--set-consensus replaces it with the imported ground truth)."
            out.write(f"Consensus set unchanged: {after}{hint}")
        out.write(f"Scores recomputed: {result.scored.get('scored', 0)} scored, {result.scored.get('incomplete', 0)} without consensus.")


def _num(value) -> str:
    return "-" if value is None else f"{value:.6g}"
