"""Export images' ground truth as a Hugging Face dataset folder (parquet per split + card), optionally push it."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from scoring import cprt_bench
from scoring.models import ScoringProfile


class Command(BaseCommand):
    help = (
        "Write OUT_DIR/data/<split>.parquet and a dataset card README.md that datasets.load_dataset(OUT_DIR) "
        "understands. --push-to uploads the folder with the HF_TOKEN from the environment."
    )

    def add_arguments(self, parser):
        parser.add_argument("out_dir")
        parser.add_argument("--split", action="append", choices=cprt_bench.SPLITS, help="repeatable (default: train and test)")
        parser.add_argument("--profile", help="profile for computed rows (default: the active profile)")
        parser.add_argument("--include-annotations", action="store_true",
                            help="add the `annotations` (raw labels, rationales) and `predictions` (judge runs) configurations")
        parser.add_argument("--include-images", action="store_true",
                            help="add the `images` configuration with the image bytes (privacy-sensitive: they leave the system)")
        parser.add_argument("--push-to", metavar="REPO", help="Hugging Face dataset repository, e.g. org/cprt-bench")
        parser.add_argument("--public", action="store_true", help="create the repository public (default: private)")

    def handle(self, *args, out_dir, split, profile, include_annotations, include_images, push_to, public, **options):
        # Everything that can be checked is checked before anything is written.
        if push_to and not settings.HF_TOKEN:
            raise CommandError("--push-to needs a Hugging Face token: set HF_TOKEN in the environment. Nothing was written.")
        if public and not push_to:
            raise CommandError("--public only makes sense with --push-to.")
        chosen = None
        if profile is not None:
            chosen = ScoringProfile.objects.filter(name=profile).first()
            if chosen is None:
                raise CommandError(f"No scoring profile named {profile!r}.")
        try:
            summary = cprt_bench.export_dataset(
                out_dir, split or ["train", "test"], chosen, include_annotations=include_annotations, include_images=include_images
            )
        except cprt_bench.ExportError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Exported to {summary['out_dir']} with profile {summary['profile']}:")
        for name, stats in summary["splits"].items():
            levels = ", ".join(f"L{lv}={n}" for lv, n in stats["levels"].items())
            self.stdout.write(
                f"  {name}: {stats['rows']} rows ({stats['published']} published, {stats['computed']} computed; {levels}); "
                f"skipped {stats['skipped_no_score']} without a score, {stats['skipped_no_labels']} without labels"
                + (f"; {stats['annotation_rows']} annotation rows" if "annotation_rows" in stats else "")
                + (f"; {stats['prediction_rows']} prediction rows" if "prediction_rows" in stats else "")
                + (f"; {stats['image_rows']} images" if "image_rows" in stats else "")
            )
            if stats["rows"] == 0:
                self.stdout.write(self.style.WARNING(f"  {name} has no rows and is left out of the dataset."))
        if push_to:
            try:
                url = cprt_bench.push_dataset(summary["out_dir"], push_to, settings.HF_TOKEN, public=public)
            except Exception as exc:  # network and Hub errors: report them plainly, the local export stays
                raise CommandError(f"Upload to {push_to} failed: {exc.__class__.__name__}: {exc}") from None
            self.stdout.write(self.style.SUCCESS(f"Pushed to {url} ({'public' if public else 'private'})."))
