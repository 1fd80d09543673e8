"""Launch a model run from the command line: what the launch page and the API launch, for scripts and CI.

The options are the launch form's fields, validated by the form itself (inference.forms.LaunchForm:
the same rules and messages as the page and the API). Without --wait or --here the run is queued
for the workers and the command returns. --wait reads the run's row until it is settled, printing
progress to stderr; --here works the run in this process on the same job code (inference.inprocess),
waiting out an outage of what it needs (saying so on stderr) and saying why it stopped if it stops
before the run is done.
--json prints the run as JSON on stdout at the end. The exit status is 0 only when the run was
queued (no --wait / --here) or finished.
"""
from __future__ import annotations

import argparse
import json

from django import forms
from django.core.management.base import BaseCommand, CommandError

from inference import inprocess, kinds, launching
from inference.providers import PROVIDERS
from inference.forms import LaunchForm, flag_fields
from inference.models import Run

# The form's field -> this command's option, where the names differ.
OPTION_OF_FIELD = {"task": "--kind", "model_name": "--model", "sample_size": "--sample"}


def option_of(field: str) -> str:
    return OPTION_OF_FIELD.get(field, "--" + field.replace("_", "-"))


def dest_of(field: str) -> str:
    """Where argparse keeps the option of a form field."""
    return option_of(field)[2:].replace("-", "_")


def run_summary(run: Run) -> dict:
    counts = dict(run.outcome_counts or {})
    return {
        "id": run.pk, "kind": run.task, "status": run.status, "results": run.done, "errors": counts.get("error", 0),
        "total": run.total, "cost_usd": float(run.estimated_cost_usd), "outcomes": counts, "provider": run.provider,
        "model": run.model_name, "strategy": run.strategy, "prompt_version": run.prompt_version, "mode": run.mode,
        "concurrency": run.concurrency, "tokens_in": run.tokens_in, "tokens_out": run.tokens_out, "error": run.error,
        "stop_reason": run.stop_reason, "items_resent": run.items_resent, "figures_url": kinds.get(run.task)(run).figures_url(run),
    }


def option_pair(text: str) -> tuple[str, str]:
    """--option NAME=VALUE: one of the kind's own launch fields."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: write NAME=VALUE (a field of the kind's launch form).")
    return name.strip(), value


class Command(BaseCommand):
    help = ("Launch a run of any registered kind with one provider and model, with the launch page's rules. "
            "--wait: until the workers finish it; --here: work it in this process.")

    def add_arguments(self, parser):
        parser.add_argument("--kind", required=True, help=f"The run kind: {', '.join(kinds.KINDS)}.")
        parser.add_argument("--provider", required=True, help=f"{', '.join(PROVIDERS)}.")
        parser.add_argument("--model", required=True, help="As the provider names it, e.g. gpt-5.1.")
        parser.add_argument("--strategy", help="Judge runs: zero_shot, intuition or taxonomy.")
        parser.add_argument("--counterfactual-faces", action="store_true", help="Judge runs: assume every face is perfectly anonymized.")
        parser.add_argument("--face-variant", help="Judge runs: method:threshold:margin of the anonymized variants to judge.")
        parser.add_argument("--prompt-version", help="Default: the latest of the kind.")
        parser.add_argument("--split", help="all (default), train, test or other.")
        parser.add_argument("--dataset-version", help="Only the images of this dataset version (its name).")
        parser.add_argument("--attribute", help="Only images whose consensus has this attribute ...")
        parser.add_argument("--attribute-value", help="... equal to 0 or 1.")
        parser.add_argument("--level", help="Only images of this consensus level (1-4).")
        parser.add_argument("--from-run", help="Only images this judge run scored ...")
        parser.add_argument("--min-score", help="... at or above this score.")
        parser.add_argument("--also-from-runs", help="More judge run ids, comma-separated, that must have scored the image too.")
        parser.add_argument("--sample", help="A random sample of this many images (default: all).")
        parser.add_argument("--seed", help="The sample's seed.")
        parser.add_argument("--concurrency", help="Requests in flight for the whole run.")
        parser.add_argument("--mode", help="online (default) or batch (the provider's batch API).")
        for name, help_text, field in flag_fields():  # the kinds' own fields that have an option of their own
            if isinstance(field, forms.BooleanField):
                parser.add_argument(option_of(name), dest=name, action="store_true", help=help_text)
            else:
                parser.add_argument(option_of(name), dest=name, help=help_text)
        parser.add_argument("--option", action="append", type=option_pair, metavar="NAME=VALUE", help=(
            "One of the kind's own launch fields (repeatable): " + "; ".join(
                f"{key}: {', '.join(cls.launch_form.base_fields)}" for key, cls in kinds.KINDS.items() if cls.launch_form) + "."))
        self.add_how_arguments(parser)

    @staticmethod
    def add_how_arguments(parser) -> None:
        """--wait | --here, --timeout, --json: how the command follows the run (retry_failed too)."""
        how = parser.add_mutually_exclusive_group()
        how.add_argument("--wait", action="store_true", help="Wait until the workers have finished the run (progress on stderr).")
        how.add_argument("--here", action="store_true", help="Work the run in this process (no worker, no broker message).")
        parser.add_argument("--timeout", type=float, help="With --wait: give up waiting after this many seconds (the run goes on).")
        parser.add_argument("--json", action="store_true", help="Print the run as JSON at the end.")

    def handle(self, *args, **options):
        if options["timeout"] is not None and not options["wait"]:
            raise CommandError("--timeout goes with --wait.")
        form = LaunchForm.from_values(self.form_data(options))
        if not form.is_valid():
            raise CommandError(self.describe_errors(form))
        spec = form.spec()
        if options["here"] and inprocess.why_not_here(spec.provider, spec.mode):
            raise CommandError(f"--here: {inprocess.why_not_here(spec.provider, spec.mode)}")
        try:
            run = launching.launch_run(None, spec, send=not options["here"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Run #{run.pk} launched over {run.total_images} images "
                          f"({run.task} {run.provider}/{run.model_name}, {run.mode}).")
        self.follow(run, options)

    def follow(self, run: Run, options: dict) -> None:
        """Work the run here, wait for it, or leave it queued; report it; fail unless it finished
        (with --here or --wait)."""
        self._last = None
        try:
            if options["here"]:
                run = inprocess.work(run.pk, self.progress, notice=self.stderr.write)
            elif options["wait"]:
                run = inprocess.watch(run.pk, self.progress, timeout=options["timeout"])
            else:
                run = Run.objects.get(pk=run.pk)
        except (ValueError, TimeoutError) as exc:
            self.finish(Run.objects.get(pk=run.pk), options)
            raise CommandError(str(exc)) from None
        self.finish(run, options)
        if (options["here"] or options["wait"]) and run.status != Run.STATUS_FINISHED:
            detail = f": {run.error}" if run.error else ""
            raise CommandError(f"Run #{run.pk} ended {run.status}{detail}" if not run.is_active
                               else f"Run #{run.pk} is {run.status} and waits for a decision{detail}")

    @staticmethod
    def form_data(options: dict) -> dict:
        """The form's own defaults (as the page offers them), then every option given: the shared fields,
        the kind's own (those with an option of their own, see flag_fields, or any as --option NAME=VALUE)."""
        data = {name: field.initial for name, field in LaunchForm.base_fields.items() if field.initial is not None}
        for name in LaunchForm.base_fields:
            value = options.get(dest_of(name))
            if value not in (None, False):
                data[name] = value
        for name, _help, _field in flag_fields():
            if options.get(name) not in (None, False):
                data[name] = options[name]
        data["options"] = dict(options.get("option") or [])
        return data

    @staticmethod
    def describe_errors(form: LaunchForm) -> str:
        lines = []
        for field, errors in form.errors.items():
            where = "" if field == "__all__" else f"{option_of(field)}: "
            lines.extend(f"{where}{message}" for message in errors)
        return "\n".join(lines)

    def progress(self, run: Run) -> None:
        line = f"run #{run.pk} {run.status}: {run.done}/{run.total} images ({run.percent_done}%)"
        if line != self._last:
            self.stderr.write(line)
            self._last = line

    def finish(self, run: Run, options: dict) -> None:
        summary = run_summary(run)
        if options["json"]:
            self.stdout.write(json.dumps(summary, ensure_ascii=False))
        else:
            outcomes = ", ".join(f"{k} {v}" for k, v in sorted(summary["outcomes"].items())) or "none yet"
            self.stdout.write(f"Run #{run.pk} {run.status}: {run.done} of {run.total} images have a result ({outcomes}); "
                              f"estimated cost ${summary['cost_usd']:.4f}.")
