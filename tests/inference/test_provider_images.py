"""Several images per request: OpenAI, Gemini and vLLM, online (Provider.ask) and as batch request lines
(submitted through the SDKs' batch calls), reach the fake servers with every image, in order."""
from __future__ import annotations

import io
import json

import pytest
from PIL import Image as PILImage

from inference.batch.clients import client_for
from inference.providers import ModelRequest, get_provider
from tests.fakes import gemini_server as gfake
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import *  # noqa: F401,F403

SCHEMA = {"type": "object", "properties": {"same": {"type": "boolean"}, "reasoning": {"type": "string"}},
          "required": ["same", "reasoning"], "additionalProperties": False}


def picture(color, size=(8, 6), fmt="PNG") -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", size, color).save(out, format=fmt)
    return out.getvalue()


def three_images():
    return [(picture((255, 0, 0)), "image/png"), (picture((0, 255, 0), fmt="JPEG"), "image/jpeg"), (picture((0, 0, 255)), "image/png")]


@pytest.fixture(params=["openai", "gemini", "vllm"])
def provider_and_fake(request):
    fixture = {"openai": "openai_server", "gemini": "gemini_server", "vllm": "vllm_server"}[request.param]
    server = request.getfixturevalue(fixture)
    images_of = gfake.request_images if request.param == "gemini" else ofake.request_images
    return request.param, server, images_of


def test_a_three_image_request_reaches_the_server_with_all_three_in_order(provider_and_fake, db):
    name, server, images_of = provider_and_fake
    images = three_images()
    reply = get_provider(name, "fake-model").ask("Compare.", "Are these the same picture?", images, SCHEMA, "same")
    assert reply.parsed == {"same": False, "reasoning": "fake comparison of 3 images"}
    assert images_of(server.requests[-1]["json"]) == [data for data, _ in images]


def test_vllm_downscales_each_image_of_a_request(vllm_server, settings, db):
    settings.VLLM_MAX_PIXELS = 64 * 64
    small, large = picture((1, 2, 3)), picture((200, 100, 0), size=(200, 100))
    get_provider("vllm", "fake-model").ask("s", "u", [(large, "image/png"), (small, "image/png"), (large, "image/png")], SCHEMA, "same")
    sent = ofake.request_images(vllm_server.requests[-1]["json"])
    assert len(sent) == 3 and sent[1] == small
    for data in (sent[0], sent[2]):
        with PILImage.open(io.BytesIO(data)) as img:
            assert img.width * img.height <= 64 * 64 and img.format == "JPEG" and img.width > img.height


def test_batch_lines_carry_every_image_in_order(provider_and_fake, tmp_path, db):
    name, server, images_of = provider_and_fake
    images = three_images()
    client = client_for(name, "fake-model")
    line = client.line("run1-img2-same", ModelRequest("Compare.", "Same picture?", "same", SCHEMA, tuple(images)))
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(line) + "\n")
    client.submit(str(path), 1, {"cprt_batch": "1"})  # through the SDK's file upload / batch create
    if name == "gemini":
        (key, request), = next(iter(server._gbatches.values()))["requests"]
        assert key == "run1-img2-same"
        received = images_of(request)
    else:
        (body,) = [json.loads(text)["body"] for data in server._files.values() for text in data.splitlines() if text.strip()]
        received = images_of(body)
    assert received == [data for data, _ in images]
