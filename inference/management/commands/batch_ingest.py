"""Ingest a vLLM run_batch output file (OpenAI batch output format) for an exported offline batch."""
from django.core.management.base import BaseCommand, CommandError

from inference.batch.models import ProviderBatch
from inference.batch.offline import ingest_file


class Command(BaseCommand):
    help = "Ingest the output of `vllm run-batch` for a batch written by batch_export."

    def add_arguments(self, parser):
        parser.add_argument("batch_id", type=int, help="The offline batch number batch_export printed.")
        parser.add_argument("output", help="run_batch's -o file.")

    def handle(self, batch_id, output, **options):
        batch = ProviderBatch.objects.filter(pk=batch_id).first()
        if batch is None:
            raise CommandError(f"There is no batch {batch_id}.")
        try:
            report = ingest_file(batch, output)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if report is None:
            raise CommandError(f"Batch {batch_id} was ingested already (or is being ingested right now); nothing stored.")
        refused = "".join(f"\n  refused {r['file']} line {r['line']}: {r['reason']}" for r in report["refused"])
        self.stdout.write(f"Batch {batch_id}: stored {report['stored']}, stage-1 answers kept {report['stage1_kept']}, "
                          f"failed {report['failed'] + report['no_result']}, refused {report['refused_count']} lines.{refused}")
