"""vLLM batches: the OpenAI batch format both ways.

A server with a Batches endpoint (VLLM_BATCH_MODE=api) is driven by the OpenAI batch client. The usual
path is vLLM's offline entry point on a GPU machine, which reads the same request file and writes
OpenAI's output format (`{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}`),
parsed here by the OpenAI parser.
"""
from __future__ import annotations

from ..openai.batch import OpenAIBatchClient as VLLMBatchClient  # noqa: F401 - the same client, vLLM's URL
from ..openai.batch import parse_lines  # noqa: F401 - run_batch writes OpenAI's output format

RUN_BATCH = "vllm run-batch -i {input} -o {output} --model {model}"


def run_batch_command(input_path: str, output_path: str, model: str) -> str:
    return RUN_BATCH.format(input=input_path, output=output_path, model=model)
