"""The scoring services, one module per topic (as Zulip's `zerver/actions/<topic>.py`, pretix's
`base/services/<topic>.py`). They read the ORM, compute with the pure modules (scoring.engine,
scoring.metrics, scoring.agreement, ...), cache and write; pages, the API, tasks and seams call them.

- `scores`: stored labels -> stored consensus and scores (`recompute_scores`, `rescore_image`);
- `cache`: the computed-metrics cache (`cached`, `jsonable`);
- `run_metrics`: judge-run metrics and plot points;
- `agreement`: the agreement study, an annotate run vs ground truth;
- `disagreements`: the disagreement queue and its filters;
- `adjudication`: an adjudicator's final label (written by `annotations.services.labels`), audit, rescore;
- `counterfactuals`: counterfactual-faces comparisons;
- `leaderboard`, `comparison`, `calibration`: the like-for-like ranking, paired comparison, calibration.
"""
