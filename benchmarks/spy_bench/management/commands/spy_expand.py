"""Expand a SPY-Bench benchmark file into upstream's rows (gen_eval_file), each with its exact prompt."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks.spy_bench import files
from benchmarks.spy_bench.upstream import BenchmarkError, expand


class Command(BaseCommand):
    help = ("Write the rows of a SPY-Bench benchmark file as JSONL, in upstream's row format with the exact "
            "input_question each row sends (instructions 1/0 without a scenario, 1 per non-privacy scenario, "
            "1 and 0 per privacy scenario).")

    def add_arguments(self, parser):
        parser.add_argument("benchmark", help='The benchmark file ({"benchmark_list": [...]}).')
        parser.add_argument("--label2text", required=True, help="label2text.json: label -> its text.")
        parser.add_argument("--add-distractors", action="store_true", help="One instruction line per label of other_labels.")
        parser.add_argument("--out", required=True, help="Where to write the rows (JSONL).")

    def handle(self, benchmark, label2text, add_distractors, out, **options):
        try:
            texts = files.read_label2text(_read(label2text), label2text)
            items = files.read_benchmark(_read(benchmark), texts, benchmark)
            rows = expand(items, texts, add_distractors)
        except BenchmarkError as exc:
            raise CommandError(str(exc)) from None
        target = Path(out)
        if not target.parent.is_dir():
            raise CommandError(f"--out: the folder {target.parent} does not exist.")
        target.write_text(files.write_rows(rows), encoding="utf-8")
        self.stdout.write(f"Wrote {len(rows)} rows of {len(items)} items to {out}"
                          f"{' (with distractors)' if add_distractors else ''}.")


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
