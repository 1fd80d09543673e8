"""CPRT-Bench rows in and out: strict parsing, import with boundary fitting, Hugging Face export.

One job per module:
- `reading`: read and validate rows (JSON, JSON Lines, parquet; streamed), score rows without storing them;
- `importing`: import rows and fit the level boundaries into a scoring profile;
- `export`: the export writer (a Hugging Face datasets folder of parquet files);
- `card`: the export's dataset card;
- `hub`: pushing an export folder to the Hub;
- `common`: constants, errors and the privacy rule for annotator names shared by those.

The import_cprt, score_labels and export_hf commands and the browser export job (scoring.exports)
use the names below, through the package (tests replace `cprt_bench.export_dataset`).
"""
from .card import dataset_card
from .common import DEFAULT_PROFILE, MAX_LISTED_PROBLEMS, SPLITS, BenchFileError, ExportError
from .export import export_dataset
from .hub import push_dataset
from .importing import ImportResult, import_bench_file
from .reading import json_problem, parse_labels, score_row

__all__ = [
    "DEFAULT_PROFILE", "MAX_LISTED_PROBLEMS", "SPLITS", "BenchFileError", "ExportError", "ImportResult",
    "dataset_card", "export_dataset", "import_bench_file", "json_problem", "parse_labels", "push_dataset", "score_row",
]
