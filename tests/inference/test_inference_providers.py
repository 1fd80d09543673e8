"""Providers through their real SDKs against local fake servers: success, bad output, refusals, faults."""
from __future__ import annotations

import base64
import io
import time

import pytest
from PIL import Image as PILImage

from annotations import taxonomy
from inference import execution, launching, prompts, schemas
from inference.models import Run, RunResult
from inference.providers import PROVIDERS, ModelRequest, get_provider
from inference.providers.base import parse_json_object, parse_retry_after
from inference.selection import Selection
from tests.fakes import gemini_server as gfake
from tests.fakes import openai_server as ofake
from tests.fakes.fixtures import *  # noqa: F401,F403
from tests.fakes.server import Reply, score_for_image


def launch(provider: str, task: str = "judge", strategy: str = "zero_shot", concurrency: int = 2, model: str = "fake-model") -> Run:
    spec = launching.LaunchSpec(
        task=task, provider=provider, model_name=model, strategy=strategy if task == "judge" else "",
        counterfactual_faces=False, prompt_version=prompts.DEFAULT_VERSION[task], selection=Selection(), concurrency=concurrency,
    )
    return launching.launch_run(None, spec)


def run_once(provider, django_capture_on_commit_callbacks, **kw) -> Run:
    with django_capture_on_commit_callbacks(execute=False):  # no broker: the test runs the chunk itself
        run = launch(provider, **kw)
    execution.run_chunk(run.pk, run.image_ids)
    run.refresh_from_db()
    return run


FAKES = {
    "openai": ofake,
    "gemini": gfake,
}


@pytest.fixture(params=["openai", "gemini"])
def server(request):
    """The fake server of the parametrised provider (its fixture also sets the credentials)."""
    return request.param, request.getfixturevalue(f"{request.param}_server")


def _image_bytes_of(image) -> bytes:
    with image.file.open("rb") as fh:
        return fh.read()


def test_judge_success_goes_through_the_sdk(server, images, django_capture_on_commit_callbacks):
    name, fake = server
    run = run_once(name, django_capture_on_commit_callbacks, concurrency=3)
    assert run.status == Run.STATUS_FINISHED
    results = {r.image_id: r for r in run.results.all()}
    assert len(results) == len(images)
    for image in images:
        result = results[image.pk]
        assert result.outcome == "ok"
        assert result.score == pytest.approx(score_for_image(_image_bytes_of(image)))
        assert result.tokens_in > 0 and result.tokens_out > 0
        assert result.raw["judge"]["response"]  # raw kept for ok results too
    assert run.outcome_counts == {"ok": len(images)}
    assert run.tokens_in == sum(r.tokens_in for r in results.values())
    sent = fake.requests[0]["json"]
    if name == "openai":
        assert sent["model"] == "fake-model"
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["response_format"]["json_schema"]["strict"] is True
        assert sent["messages"][1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
        assert "temperature" not in sent
        assert fake.requests[0]["headers"]["authorization"] == "Bearer sk-fake-test-key-not-a-secret"
    else:
        assert fake.requests[0]["path"].endswith("/models/fake-model:generateContent")
        assert sent["generationConfig"]["responseMimeType"] == "application/json"
        assert sent["generationConfig"]["responseJsonSchema"]["required"] == ["reasoning", "score"]
        inline = sent["contents"][0]["parts"][0].get("inlineData") or sent["contents"][0]["parts"][0]["inline_data"]
        assert (inline.get("mimeType") or inline.get("mime_type")) == "image/png"
    assert sent_prompt_matches(name, sent, run)


def sent_prompt_matches(name, sent, run) -> bool:
    user = run.prompt_text["judge"]["user"]
    if name == "openai":
        return sent["messages"][1]["content"][0]["text"] == user and sent["messages"][0]["content"] == run.prompt_text["judge"]["system"]
    return sent["contents"][0]["parts"][1]["text"] == user


BAD_OUTPUTS = [
    ("malformed JSON", "The score is 0.7, I think.", "not valid JSON"),
    ("score above 1", {"reasoning": "very risky", "score": 1.7}, "score must be a number in [0, 1]"),
    ("negative score", {"reasoning": "x", "score": -0.1}, "score must be a number in [0, 1]"),
    ("score as text", {"reasoning": "x", "score": "0.5"}, "valid number"),
    ("extra field", {"reasoning": "x", "score": 0.5, "level": 1}, "Extra inputs"),
    ("array", "[0.5]", "expected a JSON object"),
]


@pytest.mark.parametrize("label,content,message", BAD_OUTPUTS, ids=[b[0] for b in BAD_OUTPUTS])
def test_bad_model_output_is_unparseable_and_kept(server, make_image, django_capture_on_commit_callbacks, label, content, message):
    name, fake = server
    make_image("2017_00000001")
    fake.queue(FAKES[name].ok(content))
    run = run_once(name, django_capture_on_commit_callbacks)
    result = run.results.get()
    assert result.outcome == RunResult.OUTCOME_UNPARSEABLE
    assert message in result.error
    assert result.score is None
    assert result.raw["judge"]["text"] == (content if isinstance(content, str) else __import__("json").dumps(content))
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"unparseable": 1}


def test_openai_refusal_is_refused(openai_server, make_image, django_capture_on_commit_callbacks):
    make_image("2017_00000001")
    openai_server.queue(ofake.refusal("I can't assess images of people."))
    run = run_once("openai", django_capture_on_commit_callbacks)
    result = run.results.get()
    assert result.outcome == "refused"
    assert "I can't assess images of people." in result.error
    assert result.raw["judge"]["refusal"] == "I can't assess images of people."


def test_openai_content_filter_is_refused(openai_server, make_image, django_capture_on_commit_callbacks):
    make_image("2017_00000001")
    openai_server.queue(ofake.ok(None, finish_reason="content_filter"))
    run = run_once("openai", django_capture_on_commit_callbacks)
    assert run.results.get().outcome == "refused"


@pytest.mark.parametrize("reply,reason", [(gfake.blocked("SAFETY"), "prompt blocked (SAFETY)"),
                                          (gfake.finish_blocked("PROHIBITED_CONTENT"), "response blocked (PROHIBITED_CONTENT)")])
def test_gemini_blocks_are_refused(gemini_server, make_image, django_capture_on_commit_callbacks, reply, reason):
    make_image("2017_00000001")
    gemini_server.queue(reply)
    run = run_once("gemini", django_capture_on_commit_callbacks)
    result = run.results.get()
    assert result.outcome == "refused"
    assert reason in result.error
    assert result.raw["judge"]["response"]


def test_429_with_retry_after_is_honoured(server, make_image, django_capture_on_commit_callbacks):
    name, fake = server
    make_image("2017_00000001")
    if name == "openai":
        fake.queue(ofake.error(429, "slow down", headers={"Retry-After": "1"}))
    else:
        fake.queue(gfake.error(429, "quota", retry_delay="1s"))
    started = time.monotonic()
    run = run_once(name, django_capture_on_commit_callbacks)
    elapsed = time.monotonic() - started
    result = run.results.get()
    assert result.outcome == "ok"
    assert elapsed >= 1.0, "the retry must wait what the server asked"
    assert fake.count == 2
    assert result.raw["retries"][0]["status"] == 429 and result.raw["retries"][0]["retry_after"] == 1.0


def test_500_then_success(server, make_image, django_capture_on_commit_callbacks):
    name, fake = server
    make_image("2017_00000001")
    fake.queue(FAKES[name].error(500, "boom"), FAKES[name].error(503, "busy"))
    run = run_once(name, django_capture_on_commit_callbacks)
    result = run.results.get()
    assert result.outcome == "ok" and fake.count == 3
    assert [r["status"] for r in result.raw["retries"]] == [500, 503]


def test_timeouts_past_max_attempts_are_not_final(server, make_image, django_capture_on_commit_callbacks, settings):
    """Transient is not final: the chunk tries the image again after a pause instead of storing an error."""
    name, fake = server
    settings.CPRT_PROVIDER_TIMEOUT_S = 0.3
    settings.CPRT_PROVIDER_MAX_ATTEMPTS = 2
    make_image("2017_00000001")
    fake.queue(Reply(delay=1.5), Reply(delay=1.5))
    run = run_once(name, django_capture_on_commit_callbacks)
    result = run.results.get()
    assert result.outcome == "ok" and fake.count == 3
    assert run.status == Run.STATUS_FINISHED and run.outcome_counts == {"ok": 1}


def test_timeout_then_success(openai_server, make_image, django_capture_on_commit_callbacks, settings):
    settings.CPRT_PROVIDER_TIMEOUT_S = 0.3
    make_image("2017_00000001")
    openai_server.queue(Reply(delay=1.0))
    run = run_once("openai", django_capture_on_commit_callbacks)
    assert run.results.get().outcome == "ok"


def test_persistent_400_is_an_error_without_retries(server, make_image, django_capture_on_commit_callbacks):
    name, fake = server
    make_image("2017_00000001")
    fake.queue(FAKES[name].error(400, "image too large"))
    run = run_once(name, django_capture_on_commit_callbacks)
    result = run.results.get()
    assert result.outcome == "error" and "400" in result.error
    assert fake.count == 1
    assert result.raw["error"]["status"] == 400


def test_bad_credentials_fail_the_run_and_write_nothing(openai_server, images, django_capture_on_commit_callbacks):
    openai_server.queue(*[ofake.error(401, "invalid api key") for _ in images])
    run = run_once("openai", django_capture_on_commit_callbacks, concurrency=1)
    assert run.status == Run.STATUS_FAILED
    assert "401" in run.error
    assert run.results.count() == 0  # a resume after fixing the key redoes every image
    assert "sk-fake" not in run.error


def test_vllm_sends_temperature_zero_and_downscales(vllm_server, make_image, settings, django_capture_on_commit_callbacks):
    from annotations.images import attach, clean_image
    from annotations.models import Image

    settings.VLLM_MAX_PIXELS = 40_000
    big = io.BytesIO()
    PILImage.new("RGB", (800, 600), (120, 30, 200)).save(big, format="PNG")
    image = Image(vispr_id="2017_99999999", split="test", source="test")
    attach(image, clean_image(big.getvalue()))
    image.save()
    run = run_once("vllm", django_capture_on_commit_callbacks)
    sent = vllm_server.requests[0]["json"]
    assert sent["temperature"] == 0
    url = sent["messages"][1]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    with PILImage.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as sent_image:
        assert sent_image.width * sent_image.height <= 40_000
        assert abs(sent_image.width / sent_image.height - 800 / 600) < 0.02
    assert run.request_params == {"temperature": 0, "max_pixels": 40_000}
    assert run.results.get().outcome == "ok"


def test_small_images_are_sent_unchanged_to_vllm(vllm_server, make_image, django_capture_on_commit_callbacks):
    image = make_image("2017_00000001")
    run_once("vllm", django_capture_on_commit_callbacks)
    url = vllm_server.requests[0]["json"]["messages"][1]["content"][1]["image_url"]["url"]
    assert base64.b64decode(url.split(",", 1)[1]) == _image_bytes_of(image)


def test_annotate_stage1_and_stage2_over_both_sdks(server, db):
    name, fake = server
    tax = taxonomy.active()
    provider = get_provider(name, "fake-model")
    p = prompts.annotate_prompts("annotate-v1", tax)
    image = b"\x89PNG fake bytes for the fake server"
    reply1 = provider.annotate_stage1(image, "image/png", p["stage1"], schemas.stage1_json_schema(tax.keys))
    stage1 = schemas.Stage1Answer.model_validate(reply1.parsed, context={"keys": tax.keys})
    text = prompts.stage2_user_text(p["stage2"]["user"], {k: v.model_dump() for k, v in stage1.answers.items()})
    reply2 = provider.annotate_stage2(text, p["stage2"], schemas.stage2_json_schema(tax.keys))
    stage2 = schemas.Stage2Answer.model_validate(reply2.parsed, context={"keys": tax.keys})
    expected = {"yes": 1.0, "uncertain": 0.5, "no": 0.0}
    assert stage2.labels == {k: expected[v.inferable] for k, v in stage1.answers.items()}
    # Stage 2 is text only: the image is not sent again.
    last = fake.requests[-1]["json"]
    assert "image_url" not in str(last) and "inlineData" not in str(last)


@pytest.mark.django_db  # the onnx provider counts the registered classifiers
def test_providers_without_credentials_are_unavailable_with_a_reason(no_provider_keys):
    from inference.providers import availability

    states = availability()
    assert set(states) == set(PROVIDERS)
    assert not states["openai"].available and "OPENAI_API_KEY" in states["openai"].reason
    assert not states["gemini"].available and "GEMINI_API_KEY" in states["gemini"].reason
    assert not states["vllm"].available and "VLLM_BASE_URL" in states["vllm"].reason
    assert not states["onnx"].available and "register_classifier" in states["onnx"].reason


def test_provider_refuses_to_work_without_credentials(no_provider_keys):
    from inference.providers import ProviderUnavailable

    with pytest.raises(ProviderUnavailable, match="OPENAI_API_KEY"):
        get_provider("openai", "m").generate(ModelRequest("s", "u", "judge", schemas.judge_json_schema()))


@pytest.mark.parametrize(
    "text,ok",
    [('{"a": 1}', True), ('```json\n{"a": 1}\n```', True), ("", False), ("null", False), ('{"a": 1} trailing', False), ("NaN", False)],
)
def test_parse_json_object_is_strict(text, ok):
    value, error = parse_json_object(text)
    assert (value is not None) == ok and (error == "") == ok


def test_retry_after_parsing():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("99999") == 3600.0
