"""Export images' ground truth as a Hugging Face dataset folder (parquet per split + card), optionally push it."""
from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotations.datasets import versions
from annotations.faces import variants
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
        parser.add_argument("--dataset-version", help="only the images of this dataset version (its name); the card carries its Hub metadata")
        parser.add_argument("--include-annotations", action="store_true",
                            help="add the `annotations` (raw labels, rationales) and `predictions` (judge runs) configurations")
        parser.add_argument("--include-images", action="store_true",
                            help="add the `images` configuration with the image bytes (privacy-sensitive: they leave the system)")
        parser.add_argument("--face-variant", metavar="METHOD:THRESHOLD:MARGIN",
                            help="with --include-images: the face-anonymized variants of that setting (e.g. blur:0.5:0.2, "
                                 "made by anonymize_faces) instead of the originals; images without one are left out")
        parser.add_argument("--push-to", metavar="REPO", help="Hugging Face dataset repository, e.g. org/cprt-bench")
        parser.add_argument("--public", action="store_true", help="create the repository public (default: private)")

    def handle(self, *args, out_dir, split, profile, dataset_version, include_annotations, include_images, face_variant, push_to, public, **options):
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
        version = None
        if dataset_version is not None:
            version = versions.by_name(dataset_version)
            if version is None:
                raise CommandError(f"--dataset-version: there is no dataset version named {dataset_version!r}. Nothing was written.")
        setting = self._face_variant(face_variant, include_images) if face_variant is not None else None
        try:
            summary = cprt_bench.export_dataset(
                out_dir, split or ["train", "test"], chosen, include_annotations=include_annotations, include_images=include_images,
                face_variant=setting, dataset_version=version,
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
        if setting:
            self.stdout.write(f"  images: {variants.describe_setting(setting)} (anonymized variants, not the originals)")
        if push_to:
            try:
                url = cprt_bench.push_dataset(summary["out_dir"], push_to, settings.HF_TOKEN, public=public)
            except Exception as exc:  # network and Hub errors: report them plainly, the local export stays
                raise CommandError(f"Upload to {push_to} failed: {exc.__class__.__name__}: {exc}") from None
            self.stdout.write(self.style.SUCCESS(f"Pushed to {url} ({'public' if public else 'private'})."))

    @staticmethod
    def _face_variant(key: str, include_images: bool) -> dict:
        if not include_images:
            raise CommandError("--face-variant chooses which images are exported: add --include-images. Nothing was written.")
        try:
            setting = variants.parse_setting_key(key)
        except variants.VariantError as exc:
            raise CommandError(f"--face-variant: {exc}. Nothing was written.") from None
        known = [k for k, _, _ in variants.available_settings()]
        if variants.setting_key(**setting) not in known:
            raise CommandError(
                f"No image has a face-anonymized variant under {key} (settings with variants: {', '.join(known) or 'none'}; "
                "anonymize_faces makes them). Nothing was written."
            )
        return setting
