"""Recording the tasks that services send through core.dispatch, instead of sending them."""
from __future__ import annotations

from core import dispatch


def record_sends(monkeypatch, then=None) -> list[tuple[str, list]]:
    """Every task sent (by name, with its args) is appended to the returned list instead of reaching
    the broker; sends on commit are recorded when the transaction commits, as they would be sent.
    `then(task_name, args)`, if given, is called for each (e.g. to run the job on a thread)."""
    sent: list[tuple[str, list]] = []

    def send(task_name, args, kwargs, queue, rid):
        sent.append((task_name, list(args)))
        if then is not None:
            then(task_name, list(args))

    monkeypatch.setattr(dispatch, "_send", send)  # what send_now and send_on_commit both end in
    return sent
