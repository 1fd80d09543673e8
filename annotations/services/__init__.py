"""The annotations services, one module per topic (as Zulip's `zerver/actions/<topic>.py`, pretix's
`base/services/<topic>.py`); views, the API, tasks and commands call them, and the rules live there:

- `labels`: the one way labels (and adjudications) are written, with history;
- `labeling_queue`: the queue, claims, a reviewer's counters, idle drafts;
- `editing`: drafts, submissions, skips and the rules that refuse a change;
- `page`: what the labeling page shows (the blind rule applied);
- `image_history`: an image's label, labeling and adjudication history;
- `profiles`: the user's Profile and labeling preferences (blur, stay after submit);
- `vispr`: the VISPR import (`manage.py import_vispr` wraps it).
"""
