"""Print the SPY-Bench metrics of an evaluated JSONL file (upstream's row format) as JSON."""
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmarks.spy_bench import files, metrics


class Command(BaseCommand):
    help = ("Print upstream cal_metrics of an evaluated SPY-Bench file as JSON (upstream's keys; 'N/A' for an empty "
            "group). --by-label adds upstream's per-label metrics; --full adds per-scenario tables and bootstrap intervals.")

    def add_arguments(self, parser):
        parser.add_argument("evaluated", help="Evaluated rows (JSONL), each with the judge's verdict under --eval-k.")
        parser.add_argument("--eval-k", default="eval_resp", help="The key of the verdict (upstream's default: eval_resp).")
        parser.add_argument("--by-label", action="store_true", help='Also "metrics group by label", as upstream saves it.')
        parser.add_argument("--full", action="store_true", help="Also per scenario and bootstrap 95%% intervals over items.")

    def handle(self, evaluated, eval_k, by_label, full, **options):
        try:
            data = Path(evaluated).read_bytes()
        except OSError as exc:
            raise CommandError(f"{evaluated}: cannot be read ({exc.strerror or exc}).") from None
        try:
            rows = files.read_rows(data, evaluated)
            if full:
                out = metrics.report(rows, eval_k)
            elif by_label:
                out = {"metrics": metrics.cal_metrics(rows, eval_k), "metrics group by label": metrics.by_label(rows, eval_k)}
            else:
                out = metrics.cal_metrics(rows, eval_k)
        except metrics.MetricsError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(out, indent=4))
