"""Retry a run's failed items from the command line: what the run page's button and the API do.

Deletes the run's `error` results (refusals and unparseable answers stay: they will not change) and
re-sends exactly those images, once each (inference.runs.retry_failed). Without --wait or --here the
images are queued for the workers and the command returns. --wait reads the run's row until it is
settled, printing progress to stderr; --here works the run in this process (inference.inprocess).
--json prints the run as JSON on stdout at the end. The exit status is 0 only when images were
queued (no --wait / --here) or the run finished.
"""
from __future__ import annotations

from django.core.management.base import CommandError

from inference import inprocess, runs
from inference.models import Run

from .launch_run import Command as LaunchRun


class Command(LaunchRun):  # its progress lines and its report (finish)
    help = ("Re-send a run's items whose answer was an error, once each. --wait: until the workers finish it; "
            "--here: work it in this process.")

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int, help="The run's number.")
        self.add_how_arguments(parser)

    def handle(self, *args, **options):
        if options["timeout"] is not None and not options["wait"]:
            raise CommandError("--timeout goes with --wait.")
        run = Run.objects.filter(pk=options["run_id"]).first()
        if run is None:
            raise CommandError(f"No run #{options['run_id']}.")
        if options["here"] and inprocess.why_not_here(run.provider, run.mode):
            raise CommandError(f"--here: {inprocess.why_not_here(run.provider, run.mode)}")
        n = runs.retry_failed(None, run, send=not options["here"])
        if not n:
            raise CommandError(f"Run #{run.pk} is {run.status} with no failed items to retry.")
        self.stderr.write(f"Run #{run.pk}: retrying {n} failed images.")
        self.follow(run, options)
