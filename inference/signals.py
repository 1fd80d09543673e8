"""What inference tells the apps above it, without importing them (they connect in their ready()).

Both are sent after the transaction that finished the run commits (``transaction.on_commit``):
- `annotate_run_finished` (kwargs ``run``): a model's labels were added; scoring rescores the
  profiles whose consensus includes that model.
- `judge_run_finished` (kwargs ``run_id``): scoring precomputes the run's metrics.
"""
from django.dispatch import Signal

annotate_run_finished = Signal()
judge_run_finished = Signal()
