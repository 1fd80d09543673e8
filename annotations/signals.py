"""What annotations tells the apps above it, without importing them (they connect in their ready()).

`labels_changed` is sent after the transaction that changed an image's human labels or its
adjudication commits (``transaction.on_commit``), with ``image_ids``: scoring rescores them; label writes
also name the ``annotator_ids`` whose labels changed (only profiles whose consensus includes one of them
need rescoring; without it, every profile is rescored).
"""
from django.dispatch import Signal

labels_changed = Signal()  # kwargs: image_ids (list[int]), optional annotator_ids (list[int])
