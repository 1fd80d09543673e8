"""SPY-Bench (achernarwang/specify-privacy-yourself), one folder: its data (models.py), upstream's
definitions (upstream.py), file import and export (files.py, importing.py), the run kind (kind.py,
launch.py), its figures (metrics.py, reports.py), pages (views.py, urls.py, templates/spy_bench/),
commands (spy_import, spy_expand, spy_metrics) and demo data (demo.py); declaration.py is what the
shared pages read. docs/spy-bench.md describes it."""
