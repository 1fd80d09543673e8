"""Schemathesis over the OpenAPI schema of /api/schema/: no operation answers 5xx, and responses conform.

Every generated request goes through the real WSGI application (cprt_site.wsgi) with a token: one
pass as an admin (every endpoint really runs, not just a 401), one as reviewer_a (owner checks, the
blind rule, 403 on staff and admin endpoints). The database holds images with bytes and consensus
scores, a draft labeling of reviewer_a's, a finished judge run with results, an annotate run and a
running run; generated path ids are often swapped for those real ids (`REAL_IDS`), so detail and
write endpoints get past their 404.

The schema is built at collection time (there is no database then, so no token to fetch it with);
test_the_fuzzed_schema_is_the_served_one checks that /api/schema/ serves exactly that document.

Generated writes may create data (claims, labelings, runs) inside the test transaction. A launched
run is dispatched on commit (inference.launching.launch_run), which never happens in a test
transaction; `no_dispatch` makes sure nothing could reach a broker anyway.

Bounded: MAX_EXAMPLES per operation in the fuzzing phase, plus the examples and coverage phases'
few cases; the whole file runs in well under a minute (docs/testing.md).
"""
from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.specs.openapi.checks import positive_data_acceptance

from annotations.models import Annotator, Labeling
from inference import dispatching
from scoring.services import scores
from scoring.models import ScoringProfile
from tests.support.permission_cases.scoring import add_results, make_run

MAX_EXAMPLES = 30
FAKE_KEY = "sk-fake-test-key-not-a-secret"
bounded = settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))

# Every check but positive_data_acceptance: a request valid by the schema may still be refused with a
# 400 for a rule the schema cannot express (a judge run needs a strategy, an attribute key must exist
# in the active taxonomy, a labeling version must be the current one), so "schema-valid means 2xx"
# does not hold for this API. not_a_server_error, status code, content type, headers and response
# schema conformance, negative_data_rejection (schema-invalid input must be refused), unsupported
# methods and the rest stay on.
EXCLUDED_CHECKS = [positive_data_acceptance]

# Path parameter name -> ids of real objects, filled by the `world` fixture for the running test.
REAL_IDS: dict[str, list[int]] = {}


def generated_schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _wsgi_application():
    from cprt_site.wsgi import application

    return application


schema = schemathesis.openapi.from_dict(generated_schema())
schema.app = _wsgi_application()


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    """Half the time, put real ids in the path (the generated ones almost never exist); only over integers,
    so the negative cases (a string where the id goes) stay as generated."""
    names = [name for name, value in (path_parameters or {}).items() if type(value) is int and REAL_IDS.get(name)]
    if not names:
        return st.just(path_parameters)
    real = st.fixed_dictionaries({name: st.sampled_from(REAL_IDS[name]) for name in names})
    return st.one_of(st.just(path_parameters), real.map(lambda ids: {**path_parameters, **ids}))


@pytest.fixture
def wsgi_app(db, settings):
    """The real WSGI application, inside the test's transaction.

    As Django's test client does, the handler's request_started/finished signals must not close the
    connection that holds the test transaction.
    """
    settings.ALLOWED_HOSTS = ["localhost", "testserver"]
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield schema.app
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture
def no_dispatch(monkeypatch):
    sent = []
    monkeypatch.setattr(dispatching, "dispatch", lambda run_id, image_ids=None: sent.append(run_id) or 0)
    return sent


@pytest.fixture
def world(admin_user, reviewer_a, reviewer_b, adjudicator, make_image, set_labels, model_annotators, settings, no_dispatch):
    """Images with bytes and consensus, a draft labeling, runs with results; an OpenAI key so that launches pass the form."""
    settings.OPENAI_API_KEY = FAKE_KEY
    images = [make_image(f"2017_st{i:03d}", split=("test", "train")[i % 2], color=(i * 20, 90, 200 - i * 20)) for i in range(5)]
    gpt, gemini = model_annotators
    profile = ScoringProfile.active()
    profile.consensus_annotators.set([gpt, gemini])
    profile.activate()
    for annotator in (gpt, gemini):
        for i, image in enumerate(images[:3]):
            set_labels(image, annotator, {"gov_ids": float(i == 0), "age": 1.0})
    scores.recompute_scores(profile)
    labeling = Labeling.objects.create(image=images[3], annotator=Annotator.for_user(reviewer_a))
    judge = make_run()
    add_results(judge, [(image, "ok", 0.2 + 0.1 * i) for i, image in enumerate(images)])
    runs = [judge, make_run(task="annotate", annotator=gpt), make_run(status="running")]
    REAL_IDS.update(image_id=[i.pk for i in images], labeling_id=[labeling.pk], run_id=[r.pk for r in runs])
    yield
    REAL_IDS.clear()


def token_for(user) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def call(case, user):
    response = case.call_and_validate(headers={"Authorization": f"Token {token_for(user)}"}, excluded_checks=EXCLUDED_CHECKS)
    assert response.status_code != 401, "the token must authenticate every generated request"
    return response


def test_the_fuzzed_schema_is_the_served_one(wsgi_app, admin_user):
    served = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app,
                                            headers={"Authorization": f"Token {token_for(admin_user)}"})
    assert served.raw_schema == schema.raw_schema
    assert len(list(served.get_all_operations())) == 33  # + exports (4), imports (3), dataset builds (3)


@pytest.mark.slow  # MAX_EXAMPLES requests per operation: seconds each, minutes in all
@schema.parametrize()
@bounded
def test_api_as_admin(case, wsgi_app, world, admin_user):
    call(case, admin_user)


@pytest.mark.slow
@schema.parametrize()
@bounded
def test_api_as_reviewer(case, wsgi_app, world, reviewer_a):
    call(case, reviewer_a)
