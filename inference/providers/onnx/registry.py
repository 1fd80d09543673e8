"""Registering a local classifier: the file is loaded, its input and output checked, a dummy batch run
through it; only then is it copied under CPRT_DATA_DIR/classifiers/ and its row written. Anything
else is refused with a message, and nothing is stored.

What is accepted (the S2P interface, spec vispr-and-benchmarks.md section 6):
- one input, float32, shape N x 3 x 448 x 448 (N dynamic, or a fixed positive size);
- one output, float, shape N x 2: either probabilities (every value in [0, 1], each row summing to
  1 within 1e-3: checked on the dummy batch) or logits (`--output logits`: any finite values, turned
  into probabilities here by a row-wise softmax);
- two classes, "private" and "public", in the order of the output's columns. The order comes from
  `--classes`, else from the file's metadata (`cprt.classes`, written by tools/s2p_to_onnx.py);
  a file with neither is refused, because getting it backwards would invert every answer.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction

from core import strictjson
from core.audit import audit

from .models import ClassifierModel
from .preprocess import S2P_PREPROCESSING
from .session import open_session, softmax

INPUT_CHW = [3, 448, 448]
CLASSES = {"private", "public"}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]*\Z")  # the launch form's model-name rule
DUMMY_BATCH = 2
SUM_TOLERANCE = 1e-3


class RegistrationError(ValueError):
    """The model cannot be registered; the message says why."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def parse_classes(text: str) -> list[str]:
    classes = [c.strip().lower() for c in text.split(",") if c.strip()]
    if len(classes) != 2 or set(classes) != CLASSES:
        raise RegistrationError(f"--classes must name private and public once each, in the output's column order "
                                f"(e.g. private,public); got {text!r}.")
    return classes


def _stated_preprocessing(text: str) -> dict:
    """The file's cprt.preprocessing metadata: a JSON object; RegistrationError otherwise."""
    try:
        stated = strictjson.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RegistrationError(f"The file's cprt.preprocessing metadata is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(stated, dict):
        raise RegistrationError("The file's cprt.preprocessing metadata must be a JSON object (resize, mean, std, scale).")
    return stated


def _dims(shape) -> list:
    """onnxruntime's shape with every symbolic or unknown dimension as None."""
    return [d if isinstance(d, int) and d > 0 else None for d in shape]


def inspect(path: Path, classes: list[str] | None = None, output_kind: str | None = None) -> dict:
    """Everything the row stores, from the file itself; RegistrationError for anything else."""
    try:
        session = open_session(str(path))
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types for every kind of bad file
        raise RegistrationError(f"{path.name} is not an ONNX model onnxruntime can load: {str(exc).splitlines()[0][:300]}") from None
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if len(inputs) != 1:
        raise RegistrationError(f"The model must take exactly one input (N x 3 x 448 x 448 float); it takes {len(inputs)}.")
    if len(outputs) != 1:
        raise RegistrationError(f"The model must give exactly one output (N x 2); it gives {len(outputs)}: "
                                f"{', '.join(o.name for o in outputs)}. Export only the privacy output.")
    inp, out = inputs[0], outputs[0]
    shape = _dims(inp.shape)
    if inp.type != "tensor(float)" or len(shape) != 4 or shape[1:] != INPUT_CHW:
        shown = [d if d is not None else "N" for d in shape]
        raise RegistrationError(f"The input {inp.name!r} must be N x 3 x 448 x 448 float (tensor(float)); "
                                f"it is {' x '.join(map(str, shown)) or 'a scalar'} {inp.type}.")
    out_shape = _dims(out.shape)
    if out.type not in ("tensor(float)", "tensor(double)") or len(out_shape) != 2 or out_shape[1] not in (None, 2):
        shown = [d if d is not None else "N" for d in out_shape]
        raise RegistrationError(f"The output {out.name!r} must be N x 2 float (two classes); "
                                f"it is {' x '.join(map(str, shown)) or 'a scalar'} {out.type}.")
    meta = session.get_modelmeta().custom_metadata_map or {}
    if classes is None:
        if "cprt.classes" not in meta:
            raise RegistrationError("Say the order of the output's columns with --classes (S2P trained on IPD: private,public; "
                                    "on PrivacyAlert: public,private); the file does not say it (no cprt.classes metadata).")
        classes = parse_classes(meta["cprt.classes"])
    output_kind = output_kind or meta.get("cprt.output") or ClassifierModel.OUTPUT_PROBABILITIES
    if output_kind not in dict(ClassifierModel.OUTPUTS):
        raise RegistrationError(f"--output must be probabilities or logits, not {output_kind!r}.")
    batch = shape[0] or DUMMY_BATCH
    dummy = np.random.default_rng(0).standard_normal((batch, *INPUT_CHW)).astype(np.float32)
    try:
        (result,) = session.run([out.name], {inp.name: dummy})
    except Exception as exc:  # noqa: BLE001
        raise RegistrationError(f"A dummy batch of {batch} images failed in the model: {str(exc).splitlines()[0][:300]}") from None
    result = np.asarray(result)
    if result.shape != (batch, 2):
        raise RegistrationError(f"On a batch of {batch} images the model gave shape {list(result.shape)}; it must give {[batch, 2]}.")
    if not np.all(np.isfinite(result)):
        raise RegistrationError("The model gave NaN or infinite values on a dummy batch.")
    if output_kind == ClassifierModel.OUTPUT_PROBABILITIES:
        sums = result.sum(axis=1)
        if result.min() < 0 or result.max() > 1 or np.abs(sums - 1).max() > SUM_TOLERANCE:
            raise RegistrationError(f"The output is not probabilities (row sums {np.round(sums, 4).tolist()}, values in "
                                    f"[{result.min():.4g}, {result.max():.4g}]); if the model gives logits, pass --output logits.")
    else:
        softmax(result)  # defined for any finite row
    preprocessing = dict(S2P_PREPROCESSING)
    if "cprt.preprocessing" in meta:
        stated = _stated_preprocessing(meta["cprt.preprocessing"])
        different = {k for k in ("resize", "mean", "std", "scale") if k in stated and not np.allclose(stated[k], preprocessing[k])}
        if different:
            raise RegistrationError(f"The file's cprt.preprocessing differs from S2P's in {', '.join(sorted(different))}; "
                                    "only S2P's preprocessing is supported.")
    return {
        "input_name": inp.name, "input_shape": shape, "output_name": out.name, "output_kind": output_kind,
        "classes": classes, "preprocessing": preprocessing, "source": meta.get("cprt.source", "")[:2000],
    }


def register(name: str, source: Path, classes: list[str] | None = None, output_kind: str | None = None, user=None) -> ClassifierModel:
    """Check `source` and store it as classifier `name`; RegistrationError (nothing stored) otherwise.

    Never a file without its row nor a row without its file: the copy goes to a temporary name, the
    row and its audit event are written in one transaction, and the rename to the final name is that
    transaction's last step. On any failure the transaction is rolled back (a cut connection loses it
    on the server's side) and the files this call made are removed, without asking the database
    (which may be the thing that failed). Files are named by content, so two names may share one; a
    file that existed before this call is never removed. Call it outside any transaction: its
    commit is the moment the classifier exists.
    """
    if not NAME.match(name or "") or len(name) > 200:
        raise RegistrationError(f"{name!r} is not a valid name: letters, digits and . _ : / @ + - only, at most 200 characters.")
    if ClassifierModel.objects.filter(name=name).exists():
        raise RegistrationError(f"A classifier named {name!r} is already registered; choose another name.")
    source = Path(source)
    if not source.is_file():
        raise RegistrationError(f"{source} is not a readable file.")
    fields = inspect(source, classes, output_kind)
    digest = sha256_of(source)
    folder = Path(settings.DATA_DIR) / "classifiers"
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    target = folder / f"{safe}-{digest[:12]}.onnx"
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".part")
    os.close(fd)
    made_target = False
    try:
        shutil.copyfile(source, tmp)
        os.chmod(tmp, 0o644)
        with transaction.atomic():
            try:
                with transaction.atomic():
                    model = ClassifierModel.objects.create(name=name, file=str(target.relative_to(settings.DATA_DIR)), sha256=digest,
                                                           size_bytes=source.stat().st_size, created_by=user, **fields)
            except IntegrityError:
                raise RegistrationError(f"A classifier named {name!r} is already registered; choose another name.") from None
            audit(user, "classifier.register", model, name=name, sha256=digest, classes=fields["classes"], output=fields["output_kind"])
            made_target = not target.exists()
            os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        if made_target:
            target.unlink(missing_ok=True)
        raise
    return model
