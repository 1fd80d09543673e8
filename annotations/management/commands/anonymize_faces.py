"""Make face-anonymized variants from the command line: the same job the page launches, run here.

    python manage.py anonymize_faces [--split S] [--method blur|pixelate|fill] [--threshold T] [--margin M]

Prints images processed, faces found, images with no face and faces the residual pass still finds.
Images that already have a variant under this setting are counted, not made again.
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotations.faces import detector, jobs, pixels, variants
from annotations.faces.models import AnonymizationJob


class Command(BaseCommand):
    help = "Detect faces and store an anonymized variant of each image (blur, pixelate or fill), with a residual check."

    def add_arguments(self, parser):
        parser.add_argument("--split", default="", help="only this split (train, test, other); default: every image")
        parser.add_argument("--method", default=pixels.DEFAULT_METHOD, help="blur, pixelate or fill (default blur)")
        parser.add_argument("--threshold", default=str(detector.DEFAULT_THRESHOLD),
                            help=f"detector score above which a face is removed, 0.01-0.99 (default {detector.DEFAULT_THRESHOLD})")
        parser.add_argument("--margin", default=str(pixels.DEFAULT_MARGIN),
                            help=f"added on each side of a box, fraction of its size, 0-1 (default {pixels.DEFAULT_MARGIN})")
        parser.add_argument("--threads", type=int, default=None, help="detector threads (default CPRT_FACES_THREADS)")

    def handle(self, *args, split, method, threshold, margin, threads, **options):
        try:
            threshold_value, margin_value = float(threshold), float(margin)
        except ValueError:
            raise CommandError(f"--threshold and --margin must be numbers (got {threshold!r}, {margin!r}).") from None
        try:
            job = jobs.start_job(None, split=split, method=method, threshold=threshold_value, margin=margin_value,
                                 dispatch_task=False)
        except variants.VariantError as exc:
            raise CommandError(str(exc)) from None
        result = jobs.run_job(job.pk, threads=threads)
        job.refresh_from_db()
        self.stdout.write(
            f"images processed: {job.done - len(job.failures)} of {job.total}\n"
            f"faces found: {job.faces}\n"
            f"images with no face: {job.images_without_face}\n"
            f"faces still found on the variants (residual): {job.residual_faces}\n"
            f"setting: {job.setting_label} (job #{job.pk}, {result['status']})"
        )
        for image_id, message in job.failures:
            self.stderr.write(f"image #{image_id}: {message}")
        if job.status != AnonymizationJob.STATUS_FINISHED or job.failures:
            raise CommandError(f"{len(job.failures)} image(s) could not be anonymized." if job.failures else job.error)
