"""Permission cases for the labeling workflow: queue, next image, labeling page, draft, submit, skip,
image history, preferences, password change. The labelings belong to reviewer_a."""
from . import ALL_ROLES, STAFF_ONLY, Case, matrix

ROLES_405 = matrix(reviewer_a=405, reviewer_b=405, adjudicator=405, admin=405)
ROLES_302 = matrix(reviewer_a=302, reviewer_b=302, adjudicator=302, admin=302)
ROLES_404 = matrix(reviewer_a=404, reviewer_b=404, adjudicator=404, admin=404)


def owner_only(status: int) -> dict:
    """reviewer_a owns the labeling; everyone else with a role gets 404 (a labeling is personal)."""
    return matrix(reviewer_a=status, reviewer_b=404, adjudicator=404, admin=404)


SUGGESTER = ("openai", "suggester-model", "annotate-v1")  # the model whose suggestions the labeling images' batch shows


def suggestion_batch(world):
    """The batch showing the suggester's labels (made once per world; permission_cases/api.py uses it too)."""
    from annotations.models import Annotator, Batch

    if "suggestion_batch" not in world:
        batch = Batch.objects.create(name="perm-suggestions", show_model_suggestions=True)
        batch.suggestion_annotators.set([Annotator.for_model(*SUGGESTER)])
        world["suggestion_batch"] = batch
    return world["suggestion_batch"]


def setup(world):
    from annotations import taxonomy
    from annotations.images import attach, clean_image
    from annotations.models import Annotator, Image, Label, Labeling
    from tests.conftest import png_bytes

    annotator = Annotator.for_user(world["reviewer_a"])
    # The labeling pages are requested in a batch with model suggestions on (issue 38: the API answered 500 there).
    batch = suggestion_batch(world)
    suggester = Annotator.for_model(*SUGGESTER)
    for name in ("labeling_page", "labeling_draft", "labeling_submit", "labeling_skip", "labeling_unskip"):
        image = Image(vispr_id=f"perm_{name}", split="test", source="permission-test", batch=batch)
        attach(image, clean_image(png_bytes(color=(len(name), 1, 2))))
        image.save()
        Label.objects.bulk_create([Label(image=image, annotator=suggester, attribute_id=pk, value=1.0, rationale="suggested")
                                   for pk in taxonomy.attribute_ids().values()])
        world[name] = Labeling.objects.create(image=image, annotator=annotator)
    Labeling.objects.filter(pk=world["labeling_unskip"].pk).update(status=Labeling.STATUS_SKIPPED)


def cases(world):
    from tests.support.labeling import answers

    page, draft, submit, skip = (world[n] for n in ("labeling_page", "labeling_draft", "labeling_submit", "labeling_skip"))
    complete = {**answers("0"), "version": 1}
    return [
        Case("annotations:queue", expect=ALL_ROLES),
        Case("annotations:queue", method="post", expect=ROLES_405),
        Case("annotations:next_image", method="post", expect=ROLES_302),
        Case("annotations:next_image", expect=ROLES_405),
        Case("annotations:labeling", kwargs={"labeling_id": page.pk}, expect=owner_only(200)),
        Case("annotations:labeling", kwargs={"labeling_id": 999999}, expect=ROLES_404),
        Case("annotations:labeling", kwargs={"labeling_id": page.pk}, method="post", expect=ROLES_405),
        Case("annotations:labeling_draft", kwargs={"labeling_id": draft.pk}, method="post", data={"version": 1, "value-age": "1"},
             expect=owner_only(200)),
        Case("annotations:labeling_draft", kwargs={"labeling_id": draft.pk}, expect=ROLES_405),
        Case("annotations:labeling_draft", kwargs={"labeling_id": 999999}, method="post", data={"version": 1}, expect=ROLES_404),
        # Missing answers: refused (400) for the owner, 404 for everyone else.
        Case("annotations:labeling_submit", kwargs={"labeling_id": page.pk}, method="post", data={"version": 1}, expect=owner_only(400)),
        Case("annotations:labeling_submit", kwargs={"labeling_id": submit.pk}, method="post", data=complete, expect=owner_only(302)),
        Case("annotations:labeling_submit", kwargs={"labeling_id": submit.pk}, expect=ROLES_405),
        Case("annotations:labeling_skip", kwargs={"labeling_id": skip.pk}, method="post", expect=owner_only(302)),
        Case("annotations:labeling_skip", kwargs={"labeling_id": skip.pk}, expect=ROLES_405),
        Case("annotations:labeling_unskip", kwargs={"labeling_id": world["labeling_unskip"].pk}, method="post", expect=owner_only(302)),
        Case("annotations:labeling_unskip", kwargs={"labeling_id": world["labeling_unskip"].pk}, expect=ROLES_405),
        Case("annotations:image_history", kwargs={"image_id": page.image_id}, expect=STAFF_ONLY),
        Case("annotations:image_history", kwargs={"image_id": 999999}, expect=matrix(reviewer_a=403, reviewer_b=403, adjudicator=404, admin=404)),
        Case("annotations:image_history", kwargs={"image_id": page.image_id}, method="post",
             expect=matrix(reviewer_a=403, reviewer_b=403, adjudicator=405, admin=405)),
        Case("annotations:preferences", expect=ALL_ROLES),
        Case("annotations:preferences", method="post", data={"blur_images_by_default": "on"}, expect=ROLES_302),
        Case("annotations:preferences", method="put", expect=ROLES_405),
        Case("annotations:password_change", expect=ALL_ROLES),
        # A wrong current password re-renders the form (200) and changes nothing.
        Case("annotations:password_change", method="post", data={"old_password": "wrong", "new_password1": "x", "new_password2": "x"},
             expect=matrix(reviewer_a=400, reviewer_b=400, adjudicator=400, admin=400)),
        Case("annotations:password_change", method="put", expect=ROLES_405),
    ]

