"""Stand-ins for privacy-sensitive photos: Pillow scenes, each with the labels it was meant to show.

Nothing here is research data. Most images are drawn from a fixed seed (a payment card, a prescription,
a crowd of blob figures...); six use real photographs from scikit-image's sample data (demo.photos: a
portrait, an ID card and a passport with a real face, a family photo, a cat, a coffee cup), so the face
pages have faces to detect and anonymize. `noisy()` makes the seeded model
annotators sometimes disagree. Used only by the demo seeding (demo.seeding), never on a request path.
"""
from __future__ import annotations

import io
import random
from dataclasses import dataclass, field
from typing import Callable

from PIL import Image as PILImage

from annotations.models import Image

from . import painting, photos
from .painting import HEIGHT, WIDTH  # noqa: F401 (the demo's public names)

DEMO_SEED = 20260321


@dataclass(frozen=True)
class Scene:
    slug: str
    title: str
    draw: Callable[[random.Random], PILImage.Image]
    labels: dict = field(default_factory=dict)  # attribute key -> 0.5 or 1; everything else is 0
    fmt: str = "PNG"  # "JPEG" scenes get fake camera EXIF, which ingestion must strip


SCENES: tuple[Scene, ...] = (
    Scene("id-card", "ID card with a face and a name", photos.photo_id_card,
          {"biometrics": 1, "gov_ids": 1, "full_legal_name": 1, "non_unique_id": 1, "age": 1, "gender": 0.5, "race_ethnicity": 0.5, "metadata": 1}),
    Scene("passport", "Passport page", photos.photo_passport,
          {"biometrics": 1, "gov_ids": 1, "full_legal_name": 1, "non_unique_id": 1, "age": 1, "gender": 1, "race_ethnicity": 0.5,
           "location": 0.5, "metadata": 1}),
    Scene("payment-card", "Payment card with digits", painting.draw_payment_card,
          {"financial_data": 1, "full_legal_name": 0.5, "property_assets": 0.5, "metadata": 0.5}),
    Scene("prescription", "Prescription / medical note", painting.draw_prescription,
          {"medical_data": 1, "full_legal_name": 1, "documents": 1, "metadata": 1}),
    Scene("street-sign", "Street sign with a road name", painting.draw_street_sign,
          {"location": 1, "property_assets": 0.5}),
    Scene("car-plate", "Car with a licence plate", painting.draw_car_plate,
          {"non_unique_id": 1, "property_assets": 1, "location": 0.5}, fmt="JPEG"),
    Scene("crowd", "Crowd of stick figures", painting.draw_crowd,
          {"background_people": 1, "activities": 0.5}, fmt="JPEG"),
    Scene("landscape", "Plain landscape", painting.draw_landscape, {}, fmt="JPEG"),
    Scene("tattoo", "Tattooed arm", painting.draw_tattoo,
          {"unique_body_markings": 1, "non_unique_id": 0.5, "race_ethnicity": 0.5}),
    Scene("laptop-email", "Laptop screen showing e-mail addresses", painting.draw_laptop_email,
          {"contact_details": 1, "non_unique_id": 0.5, "property_assets": 1, "documents": 1}),
    Scene("protest-sign", "Protest sign", painting.draw_protest_sign,
          {"beliefs": 1, "activities": 1, "background_people": 1, "location": 0.5}),
    Scene("bank-statement", "Bank statement", painting.draw_bank_statement,
          {"financial_data": 1, "full_legal_name": 1, "documents": 1, "metadata": 1}),
    Scene("jersey", "Jersey with a first name", painting.draw_jersey,
          {"non_unique_id": 1, "activities": 1}),
    Scene("selfie", "Portrait photograph", photos.photo_selfie,
          {"biometrics": 1, "age": 1, "gender": 0.5, "race_ethnicity": 0.5, "emotion_mental_health": 0.5}, fmt="JPEG"),
    Scene("wheelchair", "Wheelchair symbol and a person", painting.draw_wheelchair,
          {"disability": 0.5, "location": 0.5}),
    Scene("receipt", "Shop receipt", painting.draw_receipt,
          {"financial_data": 1, "lifestyle": 0.5, "documents": 1, "metadata": 1}),
    Scene("desk-document", "Desk with a document", painting.draw_desk_document,
          {"documents": 1, "lifestyle": 0.5}),
    Scene("wedding-banner", "Wedding banner with a date", painting.draw_wedding_banner,
          {"non_unique_id": 1, "activities": 1, "location": 0.5, "metadata": 1, "background_people": 1}),
    Scene("empty-room", "Empty room", painting.draw_empty_room, {}),
    Scene("pet", "A pet cat", photos.photo_pet, {"lifestyle": 0.5}, fmt="JPEG"),
    Scene("food", "A cup of coffee", photos.photo_food, {"lifestyle": 0.5}),
    Scene("beach", "Beach with two people", painting.draw_beach,
          {"activities": 1, "location": 0.5, "background_people": 0.5}, fmt="JPEG"),
    Scene("concert", "Concert crowd", painting.draw_concert,
          {"activities": 1, "background_people": 1, "metadata": 1}),
    Scene("house-number", "House with a number", painting.draw_house_number,
          {"contact_details": 0.5, "location": 1, "property_assets": 1}),
    Scene("hospital-bed", "Patient in a hospital bed", painting.draw_hospital_bed,
          {"biometrics": 0.5, "medical_data": 1, "emotion_mental_health": 1, "location": 0.5}),
    Scene("bar-night", "Night at a bar, smoking", painting.draw_bar_night,
          {"lifestyle": 1, "activities": 1, "gender": 0.5}),
    Scene("family-photo", "Family photo with a caption", photos.photo_family,
          {"biometrics": 1, "age": 1, "gender": 1, "race_ethnicity": 1, "beliefs": 0.5, "metadata": 1}, fmt="JPEG"),
)


def vispr_id(index: int) -> str:
    return f"demo_{index + 1:04d}"


def split_of(index: int) -> str:
    return Image.SPLIT_TRAIN if index % 3 == 0 else Image.SPLIT_TEST


def render(index: int) -> bytes:
    """The raw bytes of demo image `index`, deterministic for a given index (before cleaning)."""
    scene = SCENES[index]
    img = scene.draw(random.Random(DEMO_SEED * 1000 + index))
    out = io.BytesIO()
    if scene.fmt == "JPEG":
        exif = PILImage.Exif()
        exif[0x010F] = "DemoCam"  # Make
        exif[0x0110] = "Stand-in 1"  # Model
        exif[0x0132] = "2024:05:18 14:02:00"  # DateTime
        img.save(out, format="JPEG", quality=90, exif=exif.tobytes())
    else:
        img.save(out, format="PNG")
    return out.getvalue()


def intended_labels(scene: Scene, keys) -> dict[str, float]:
    unknown = set(scene.labels) - set(keys)
    if unknown:
        raise ValueError(f"Demo scene {scene.slug!r} uses unknown attributes {sorted(unknown)}")
    return {k: float(scene.labels.get(k, 0.0)) for k in keys}


def obvious_keys(scene: Scene, level_of: dict[str, int]) -> set[str]:
    """What a scene is drawn to show: its clearly present (1) attributes of its most severe level."""
    present = [k for k, v in scene.labels.items() if v == 1]
    if not present:
        return set()
    top = min(level_of[k] for k in present)
    return {k for k in present if level_of[k] == top}


def noisy(labels: dict[str, float], rng: random.Random, present_rate: float, absent_rate: float, keep=frozenset()) -> dict[str, float]:
    """Labels as another annotator might give them: a value moves one step with the given probability.

    Absent attributes (0) flip less often than present ones; `keep` (the obvious ones) never move,
    so annotators agree on the face on an ID card and disagree on the subtler attributes.
    """
    out = {}
    for key, value in labels.items():
        if key not in keep and rng.random() < (absent_rate if value == 0 else present_rate):
            if value == 1.0:
                value = 0.5
            elif value == 0.5:
                value = rng.choice((0.0, 1.0))
            else:
                value = 0.5 if rng.random() < 0.8 else 1.0
        out[key] = value
    return out
