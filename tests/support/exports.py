"""The export tests' world: images, model and human annotators, a judge run, a provisional profile."""
from __future__ import annotations

import zipfile
from pathlib import Path

import datasets

from annotations.models import Annotator, Labeling
from scoring.models import ExportJob, ScoringProfile
from scoring.services.scores import recompute_scores
from tests.conftest import make_user
from tests.support.permission_cases.scoring import add_results, make_run


def build_world(make_image, set_labels) -> dict:
    """Two train and three test images with stored bytes, two model annotators (the consensus set of a
    provisional profile), two people with e-mail addresses as account names, and a judge run."""
    gpt = Annotator.for_model("openai", "gpt-5.1", "annotate-v1")
    gemini = Annotator.for_model("gemini", "gemini-3-flash", "annotate-v1")
    profile = ScoringProfile.objects.create(name="models", lo1=0.75, lo2=0.5, lo3=0.25, provisional=True, source="test profile",
                                            weights=[330, 30, 5, 1])
    profile.consensus_annotators.set([gpt, gemini])
    people = []
    for username in ("jane.doe@example.org", "r.roe@uni.example.net"):
        user = make_user(username, "reviewer")
        user.email, user.first_name, user.last_name = username, "Jane", "Doeling"
        user.save()
        people.append(user)
    humans = [Annotator.for_user(user) for user in people]
    images = [make_image(f"2017_{i:05d}", split="train" if i < 2 else "test", color=(10 + 40 * i, 200 - 30 * i, 7 * i)) for i in range(5)]
    for i, image in enumerate(images):
        values = {"biometrics": 1 if i % 2 == 0 else 0, "age": 1, "location": 0.5 if i == 3 else 0}
        set_labels(image, gpt, values)
        set_labels(image, gemini, values)
        set_labels(image, humans[i % 2], {"age": 0.5})
        Labeling.objects.create(image=image, annotator=humans[i % 2], status=Labeling.STATUS_SUBMITTED)
    gpt.labels.filter(attribute__key="biometrics", value=1).update(rationale="A clear frontal face.")
    humans[0].labels.filter(attribute__key="age").update(rationale="Looks like a teenager.")
    run = make_run(model="gpt-5.1", strategy="taxonomy")
    add_results(run, [(images[0], "ok", 0.91), (images[2], "ok", 0.42), (images[3], "refused", None)])
    recompute_scores(profile)
    return {"profile": profile, "images": images, "people": people, "humans": humans, "gpt": gpt, "gemini": gemini, "run": run}


def make_job(world, **fields) -> ExportJob:
    defaults = {"splits": ["train", "test"], "profile": world["profile"], "include_annotations": True, "include_images": True}
    return ExportJob.objects.create(**(defaults | fields))


HF_TOKEN = "hf_FAKEhubTOKEN0123456789abcdef"  # the fake Hub's token in the export tests


def unzip(job: ExportJob, root: Path, into: Path) -> Path:
    """Extract a zip export under `into`; every member lies in the job's own folder."""
    with zipfile.ZipFile(root / job.zip_path) as archive:
        names = archive.namelist()
        archive.extractall(into)
    assert all(n.startswith(f"cprt-bench-export-{job.pk}/") for n in names)
    return into / f"cprt-bench-export-{job.pk}"


def load(folder: Path, config: str, cache: Path):
    return datasets.load_dataset(str(folder), config, cache_dir=str(cache))


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
