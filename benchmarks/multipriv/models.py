"""MultiPriv persons and their images (see the package docstring). The tables keep the names they had
when these models belonged to annotations (`db_table`), so moving them here kept every row."""
from __future__ import annotations

from django.db import models
from django.db.models import Q

from annotations.storage import private_image_storage


class Person(models.Model):
    name = models.CharField(max_length=64, unique=True, help_text="The release's folder name, e.g. person_1.")
    profile = models.JSONField(default=dict, help_text="Canonical field name -> value; absent fields ('None') are null.")
    raw_profile = models.JSONField(default=dict, help_text="The profile object as released (field names as written).")
    profile_file = models.CharField(max_length=200, help_text="The profile's file name in the folder, as released.")
    profile_sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "annotations_person"
        ordering = ["name"]

    def __str__(self):
        return self.name

    def present_fields(self) -> dict[str, str]:
        return {k: v for k, v in self.profile.items() if v is not None}


class PersonImage(models.Model):
    person = models.ForeignKey(Person, on_delete=models.CASCADE, related_name="images")
    category = models.CharField(max_length=1, help_text="A-G, from the file name (A1.png: category A, index 1).")
    index = models.PositiveSmallIntegerField()
    file = models.FileField(storage=private_image_storage, upload_to="")
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotations_personimage"
        ordering = ["person__name", "category", "index"]
        constraints = [
            models.UniqueConstraint(fields=["person", "category", "index"], name="one_person_image_per_slot"),
            models.CheckConstraint(condition=Q(category__in=list("ABCDEFG")), name="person_image_category_a_to_g"),
        ]

    def __str__(self):
        return f"{self.person.name}/{self.category}{self.index}"

    @property
    def label(self) -> str:
        return f"{self.category}{self.index}"


class PersonPair(models.Model):
    """Two images for the re-identification task: same person or not. Pairs are shared by runs (a run
    freezes the ids of the pairs it asks about), so two runs over the same seed ask the same pairs."""

    first = models.ForeignKey(PersonImage, on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey(PersonImage, on_delete=models.CASCADE, related_name="+")
    same_person = models.BooleanField()

    class Meta:
        db_table = "annotations_personpair"
        constraints = [
            models.UniqueConstraint(fields=["first", "second"], name="one_person_pair"),
            models.CheckConstraint(condition=Q(first__lt=models.F("second")), name="person_pair_ordered"),
        ]

    def __str__(self):
        return f"pair {self.first_id}-{self.second_id} ({'same' if self.same_person else 'different'})"
