"""vLLM: the OpenAI wire format, temperature 0 on every request, images downscaled client-side.

Structured output uses `response_format={"type": "json_schema", ...}`, which vLLM enforces with
guided decoding. Images larger than VLLM_MAX_PIXELS are resized (aspect ratio kept) before sending,
so that a huge photo cannot blow the model's context or the GPU's memory.
"""
from __future__ import annotations

import io
import math

from django.conf import settings
from PIL import Image as PILImage

from ..base import Availability, ProviderUnavailable
from ..openai.provider import OpenAICompatibleProvider


def downscale(image: bytes, mime: str, max_pixels: int) -> tuple[bytes, str]:
    """Bytes and MIME type of the image, resized to at most `max_pixels` pixels when larger."""
    with PILImage.open(io.BytesIO(image)) as img:
        width, height = img.size
        if width * height <= max_pixels:
            return image, mime
        scale = math.sqrt(max_pixels / (width * height))
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        resized = img.convert("RGB").resize(size, PILImage.Resampling.LANCZOS)
    out = io.BytesIO()
    resized.save(out, format="JPEG", quality=90)
    return out.getvalue(), "image/jpeg"


class VLLMProvider(OpenAICompatibleProvider):
    name = "vllm"

    @classmethod
    def base_url(cls) -> str:
        return settings.VLLM_BASE_URL
    label = "vLLM (open models)"
    default_model = "Qwen/Qwen2.5-VL-7B-Instruct"
    queue = "gpu"

    @classmethod
    def availability(cls) -> Availability:
        shown = {"base_url": settings.VLLM_BASE_URL or "(not set)", "max_pixels": settings.VLLM_MAX_PIXELS, "max_rpm": settings.VLLM_MAX_RPM}
        if not settings.VLLM_BASE_URL:
            return Availability(
                False, "VLLM_BASE_URL is not set: point it at an OpenAI-compatible vLLM server (`vllm serve MODEL`; see the README).", shown)
        return Availability(True, "", shown)

    def credentials(self) -> tuple[str, str]:
        if not settings.VLLM_BASE_URL:
            raise ProviderUnavailable("VLLM_BASE_URL is not set in the worker's environment.")
        # vLLM accepts any key unless started with --api-key; the SDK insists on a non-empty one.
        return settings.VLLM_API_KEY or "EMPTY", settings.VLLM_BASE_URL

    def request_params(self) -> dict:
        return {"temperature": 0}

    def prepare_image(self, image: bytes, mime: str) -> tuple[bytes, str]:
        return downscale(image, mime, settings.VLLM_MAX_PIXELS)
