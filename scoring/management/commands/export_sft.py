"""Export taxonomy-guided judge fine-tuning pairs (training split + separate evaluation file + card)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotations.datasets import versions
from inference import prompts
from scoring.models import ScoringProfile
from scoring.sft import export
from scoring.sft.hygiene import LeakError
from scoring.sft.images import FACES_ORIGINAL


class Command(BaseCommand):
    help = (
        "Write judge instruction-response pairs for supervised fine-tuning into OUT_DIR: the training split as training "
        "data, the test split as a separate evaluation file, a card (README.md). Refuses any train/test overlap."
    )

    def add_arguments(self, parser):
        parser.add_argument("out_dir")
        parser.add_argument("--format", required=True, help=f"one of {', '.join(export.FORMATS)}")
        parser.add_argument("--prompt-version", help=f"judge prompt version (default {prompts.DEFAULT_VERSION['judge']})")
        parser.add_argument("--split", default="train", help=f"training split: {' or '.join(export.TRAINING_SPLITS)} (default train)")
        parser.add_argument("--profile", help="scoring profile (default: the active profile)")
        parser.add_argument("--include-images", action="store_true",
                            help="write the image bytes (privacy-sensitive: they leave the system); the openai format needs them")
        parser.add_argument("--faces", default=FACES_ORIGINAL,
                            help="with --include-images: original (default) or an anonymization setting such as blur:0.5:0.2 "
                                 "(its face-anonymized variants; images without one are left out and listed)")
        parser.add_argument("--annotation-stages", action="store_true", help="also write pairs for the two annotation stages")
        parser.add_argument("--dataset-version", help="only the images of this dataset version (its name), on both sides")

    def handle(self, *args, out_dir, format, prompt_version, split, profile, include_images, faces, annotation_stages, dataset_version,
               **options):
        version = None
        if dataset_version is not None:
            version = versions.by_name(dataset_version)
            if version is None:
                raise CommandError(f"--dataset-version: there is no dataset version named {dataset_version!r}. Nothing was written.")
        chosen = None
        if profile is not None:
            chosen = ScoringProfile.objects.filter(name=profile).first()
            if chosen is None:
                raise CommandError(f"No scoring profile named {profile!r}. Nothing was written.")
        try:
            summary = export.export_sft(
                out_dir, format, prompt_version, split, chosen, include_images=include_images, annotation_stages=annotation_stages, faces=faces,
                dataset_version=version,
            )
        except (export.SFTError, LeakError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Exported {summary['format']} pairs to {summary['out_dir']} (prompt {summary['prompt_version']}, profile {summary['profile']}):"
        )
        for part, count in summary["pairs"].items():
            levels = ", ".join(f"L{lv}={n}" for lv, n in summary["levels"][part].items())
            self.stdout.write(f"  {part}: {count} pairs ({levels}); {summary['excluded_count'][part]} left out")
        if any(summary["excluded_count"].values()):
            self.stdout.write(self.style.WARNING("  Pairs left out are listed with their reasons in excluded.jsonl and the card."))
        if summary["include_images"]:
            self.stdout.write(self.style.WARNING("  The export contains images: they are privacy-sensitive."))
