"""The typed readers of cprt_site/env.py, in-process (the settings tests start Django per environment)."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from cprt_site import env


@pytest.fixture(autouse=True)
def own_secret_registry(monkeypatch):
    """secret() records what it reads; keep this test's values out of the settings' registry."""
    monkeypatch.setattr(env, "SECRETS_READ", {})


@pytest.mark.parametrize("raw, seconds", [("90", 90.0), ("0.5", 0.5), ("500ms", 0.5), ("5m", 300.0), ("2h", 7200.0), ("1d", 86400.0), (" 3 s ", 3.0)])
def test_durations_take_seconds_or_a_unit(monkeypatch, raw, seconds):
    monkeypatch.setenv("X_S", raw)
    assert env.envduration("X_S", 1.0, min=0.05) == seconds


@pytest.mark.parametrize("raw", ["-1", "1y", "5 minutes", "nan", "0.01"])
def test_a_bad_or_too_short_duration_is_refused(monkeypatch, raw):
    monkeypatch.setenv("X_S", raw)
    with pytest.raises(ImproperlyConfigured, match=rf"X_S='{raw}' is not allowed: seconds from 0.05 to 60"):
        env.envduration("X_S", 1.0, min=0.05, max=60)


def test_numbers_switches_and_choices(monkeypatch):
    for name, value in {"N": "50_000", "F": "0.25", "B": "Off", "C": "API", "BLANK": "  "}.items():
        monkeypatch.setenv(name, value)
    assert env.envint("N", 1, min=1) == 50_000
    assert env.envfloat("F", 1.0, min=0.0, max=1.0) == 0.25
    assert env.envbool("B", True) is False
    assert env.envchoice("C", "offline", ("offline", "api")) == "api"
    assert env.envint("BLANK", 7) == 7 and env.envbool("BLANK", True) is True  # blank: not set
    assert env.envint("UNSET", 3, min=1) == 3
    monkeypatch.setenv("F", "inf")
    with pytest.raises(ImproperlyConfigured, match="F='inf' is not allowed: a number"):
        env.envfloat("F", 1.0)
    monkeypatch.setenv("N", "1.5")
    with pytest.raises(ImproperlyConfigured, match="N='1.5' is not allowed: an integer at least 1"):
        env.envint("N", 1, min=1)


def test_urls_are_checked_and_their_password_never_shown(monkeypatch):
    monkeypatch.setenv("U", "redis://:hunter2-pw@cache:6379/0")
    assert env.envurl("U", "", ("redis",)) == "redis://:hunter2-pw@cache:6379/0"
    monkeypatch.setenv("U", "http://:hunter2-pw@cache:6379/0")
    with pytest.raises(ImproperlyConfigured) as refused:
        env.envurl("U", "", ("redis", "rediss"))
    assert "a URL starting with redis:// or rediss://" in str(refused.value) and "hunter2" not in str(refused.value)
    monkeypatch.setenv("U", "")
    assert env.envurl("U", "", ("http",)) == ""  # optional: empty is "not set"
    with pytest.raises(ImproperlyConfigured, match="set but empty"):
        env.envurl("U", "filesystem://", ("filesystem", "redis"))


def test_secret_from_the_variable_or_its_file(monkeypatch, tmp_path):
    monkeypatch.setenv("TOKEN", "from-the-env-1234")
    assert env.secret("TOKEN") == "from-the-env-1234"
    (tmp_path / "token").write_text("\n from-the-file-5678 \n")
    monkeypatch.delenv("TOKEN")
    monkeypatch.setenv("TOKEN_FILE", str(tmp_path / "token"))
    assert env.secret("TOKEN") == "from-the-file-5678"
    assert env.SECRETS_READ == {"TOKEN": "from-the-file-5678"}
    monkeypatch.setenv("TOKEN", "x")
    with pytest.raises(ImproperlyConfigured, match="TOKEN and TOKEN_FILE are both set"):
        env.secret("TOKEN")
