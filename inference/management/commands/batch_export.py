"""Write a batch run's next request file (vLLM's offline run_batch on a GPU machine reads it)."""
from django.core.management.base import BaseCommand, CommandError

from inference.batch.offline import export_file
from inference.models import Run
from inference.providers.vllm.batch import run_batch_command


class Command(BaseCommand):
    help = "Write the next request file of a batch run (OpenAI batch format) for `vllm run-batch`."

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int)
        parser.add_argument("out", help="Where to write the JSONL request file.")

    def handle(self, run_id, out, **options):
        run = Run.objects.filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"There is no run #{run_id}.")
        try:
            batch = export_file(run, out)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if batch is None:
            self.stdout.write(f"Run #{run_id}: no requests are due; nothing written.")
            return
        self.stdout.write(
            f"Wrote {batch.request_count} {batch.stage} requests ({batch.input_bytes} bytes) to {out}; offline batch {batch.pk}.\n"
            f"Next: {run_batch_command(out, 'OUT.jsonl', run.model_name)}\n"
            f"then: python manage.py batch_ingest {batch.pk} OUT.jsonl"
        )
