"""Import a SPY-Bench set (benchmark file + label2text.json) against the imported VISPR images, or
results computed elsewhere (an evaluated JSONL file in upstream's format)."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks.spy_bench import importing
from benchmarks.spy_bench.metrics import MetricsError
from benchmarks.spy_bench.upstream import BenchmarkError
from benchmarks.spy_bench.models import SpyRow, SpySet


class Command(BaseCommand):
    help = ("Import a SPY-Bench benchmark file with its label2text.json as a named set (items whose VISPR image is not "
            "imported are refused, or skipped with --skip-missing); or, with --results, an evaluated JSONL file computed "
            "elsewhere, shown on the SPY-Bench page beside our runs (marked imported).")

    def add_arguments(self, parser):
        parser.add_argument("file", help="The benchmark file, or (with --results) the evaluated rows (JSONL).")
        parser.add_argument("--name", required=True, help="The set's (or the imported results') name.")
        parser.add_argument("--label2text", help="label2text.json (for a benchmark file).")
        parser.add_argument("--skip-missing", action="store_true", help="Import the items whose image is there, skip the others.")
        parser.add_argument("--results", action="store_true", help="FILE is evaluated rows computed elsewhere.")
        parser.add_argument("--model", help="With --results: the model that answered.")
        parser.add_argument("--judge-model", default="", help="With --results: the judge model.")
        parser.add_argument("--distractors", action="store_true", help="With --results: the rows were asked with distractors.")
        parser.add_argument("--set", dest="set_name", help="With --results: the SPY-Bench set they belong to (its name).")

    def handle(self, file, name, label2text, skip_missing, results, model, judge_model, distractors, set_name, **options):
        data = _read(file)
        if results:
            spy_set = None
            if set_name:
                spy_set = SpySet.objects.filter(name=set_name).first()
                if spy_set is None:
                    raise CommandError(f"There is no SPY-Bench set named {set_name!r}.")
            try:
                imported = importing.import_results(None, name, model or "", data, judge_model, distractors, spy_set, file)
            except MetricsError as exc:
                raise CommandError(str(exc)) from None
            m = imported.report["metrics"]
            self.stdout.write(f"Imported {m['total']} evaluated rows as {imported.name!r} (#{imported.pk}); "
                              f"accuracy {m['accuracy']['score']}, hms {m['hms']}.")
            return
        if not label2text:
            raise CommandError("A benchmark file needs --label2text FILE.")
        try:
            spy_set = importing.import_set(None, name, data, _read(label2text), skip_missing, file, label2text)
        except BenchmarkError as exc:
            raise CommandError(str(exc)) from None
        skipped = len(spy_set.source.get("skipped", []))
        note = f"; skipped {skipped} items without their image." if skipped else "."
        rows = SpyRow.objects.filter(item__spy_set=spy_set).count()
        self.stdout.write(f"Imported SPY-Bench set {spy_set.name!r} (#{spy_set.pk}): {spy_set.items.count()} items, {rows} rows{note}")


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
