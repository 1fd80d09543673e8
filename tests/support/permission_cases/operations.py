"""Permission cases for the operations endpoints: no login for any of them, whoever asks gets the same
answer. /readyz fails here (no worker heartbeats); /metrics is 404 while no token or network is set
(its token and allow-list are tested in tests/core/test_metrics.py)."""
from . import Case, matrix


def setup(world):
    pass


def everyone(status: int) -> dict:
    return matrix(anonymous=status, outsider=status, reviewer_a=status, reviewer_b=status, adjudicator=status, admin=status)


def cases(world):
    return [
        Case("healthz", expect=everyone(200)),
        Case("healthz", method="post", expect=everyone(405)),
        Case("readyz", expect=everyone(503)),
        Case("metrics", expect=everyone(404)),
    ]


