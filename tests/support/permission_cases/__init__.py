"""The permission matrix as data: every URL x every persona -> expected status.

Each app contributes a module here with `setup(world)` (create the objects its URLs need, store them
in `world`) and `cases(world) -> list[Case]`. tests/cross/test_permissions.py checks that every named URL
pattern has at least one case, then requests each case as each persona.

Personas: anonymous, outsider (logged in, no role), reviewer_a, reviewer_b, adjudicator, admin.
Objects "owned" by a reviewer belong to reviewer_a, so reviewer_b's row is "a reviewer asking for
another reviewer's work".
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field

PERSONAS = ("anonymous", "outsider", "reviewer_a", "reviewer_b", "adjudicator", "admin")
LOGIN = "login"  # anonymous users are redirected to the login page


@dataclass
class Case:
    url_name: str
    kwargs: dict = field(default_factory=dict)
    method: str = "get"
    data: dict | None = None
    expect: dict = field(default_factory=dict)  # persona -> status code, or LOGIN
    query: str = ""

    def expected(self, persona: str):
        return self.expect[persona]


def matrix(anonymous=LOGIN, outsider=403, reviewer_a=200, reviewer_b=200, adjudicator=200, admin=200) -> dict:
    return {
        "anonymous": anonymous,
        "outsider": outsider,
        "reviewer_a": reviewer_a,
        "reviewer_b": reviewer_b,
        "adjudicator": adjudicator,
        "admin": admin,
    }


ALL_ROLES = matrix()
STAFF_ONLY = matrix(reviewer_a=403, reviewer_b=403)
ADMIN_ONLY = matrix(reviewer_a=403, reviewer_b=403, adjudicator=403)


# ---------------------------------------------------------------------------------------------
# The world every case module sets up, and all their cases

def case_modules():
    for info in pkgutil.iter_modules(__path__):
        yield importlib.import_module(f"tests.support.permission_cases.{info.name}")


def build_world():
    from tests.conftest import make_user

    world = {
        "anonymous": None,
        "outsider": make_user("outsider", None),
        "reviewer_a": make_user("reviewer_a", "reviewer"),
        "reviewer_b": make_user("reviewer_b", "reviewer"),
        "adjudicator": make_user("adjudicator", "adjudicator"),
        "admin": make_user("admin", "admin", superuser=True),
    }
    for module in case_modules():
        module.setup(world)
    return world


def all_cases(world):
    return [case for module in case_modules() for case in module.cases(world)]
