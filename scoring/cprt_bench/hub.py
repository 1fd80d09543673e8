"""Pushing an export folder to the Hugging Face Hub.
"""
from __future__ import annotations

from pathlib import Path



from .common import ExportError


def push_dataset(out_dir: Path | str, repo_id: str, token: str, public: bool = False, endpoint: str | None = None) -> str:
    """Upload an export folder to the Hugging Face Hub as a dataset repository; returns its URL.

    `endpoint` (default: settings.HF_ENDPOINT, empty for huggingface.co) points at another Hub.
    """
    from django.conf import settings
    from huggingface_hub import HfApi

    if not token:
        raise ExportError("Set HF_TOKEN in the environment to push to the Hugging Face Hub.")
    endpoint = endpoint or settings.HF_ENDPOINT
    api = HfApi(token=token, endpoint=endpoint) if endpoint else HfApi(token=token)
    url = api.create_repo(repo_id=repo_id, repo_type="dataset", private=not public, exist_ok=True)
    api.upload_folder(folder_path=str(out_dir), repo_id=repo_id, repo_type="dataset", commit_message="CPRT Workbench export")
    return str(url)
