"""The codes registry (claimsdb/codes.py): one family per prefix, every code documented, and
a misspelt code caught by the tests, wherever it is written."""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from unittest import TestCase

import pytest
from django.test import override_settings

from claimsdb.codes import (
    API_CODES,
    CODES,
    FAMILIES,
    REGISTERED,
    DrfCode,
    ImportNowCode,
    ScopeCode,
    UnknownCode,
    api_code,
)
from claimsdb.records import RuleViolation

ROOT = Path(__file__).resolve().parent.parent
PREFIXES = {code.split(".")[0] for code in REGISTERED if "." in code}
CODE_SHAPE = re.compile(r"[a-z]+\.[a-z_]+")
# Calls whose first argument is a code, and keyword arguments that are one.
CODE_TAKERS = {"RuleViolation", "Problem", "ImportNowRefused"}


def test_each_family_holds_the_codes_of_one_prefix():
    for family in FAMILIES:
        prefixes = {code.split(".")[0] if "." in code else "" for code in family}
        assert len(prefixes) == 1, family
        assert all(code.doc and not code.doc.endswith(".") for code in family), family
    assert {code for code in DrfCode if "." in code} == set()


def test_the_api_reports_every_bare_code_of_drf_as_a_namespaced_one():
    assert set(API_CODES) == set(DrfCode)
    for ours in API_CODES.values():
        assert "." in ours and ours in CODES
    assert api_code("invalid_choice") == "request.invalid_choice"
    assert api_code("not_authenticated") == "authentication.required"
    assert api_code("scope.non_attribution") == "scope.non_attribution"
    # a bare code no table knows (a library's own) is still namespaced
    assert api_code("invalid_date") == "request.invalid"


def test_no_code_is_registered_twice():
    assert len(REGISTERED) == sum(len(family) for family in FAMILIES)


def test_the_api_lists_claimsdbs_own_codes_but_the_web_only_ones():
    assert set(CODES) == set(REGISTERED) - set(ImportNowCode) - set(DrfCode)
    assert CODES["scope.non_attribution"] == ScopeCode.NON_ATTRIBUTION.doc


def test_a_member_is_its_code():
    violation = RuleViolation(ScopeCode.NON_ATTRIBUTION, "m", "p")
    assert violation == RuleViolation("scope.non_attribution", "m", "p")
    assert violation.as_dict()["code"] == "scope.non_attribution"
    assert f"{ScopeCode.NON_ATTRIBUTION}" == str(ScopeCode.NON_ATTRIBUTION)
    assert str(ScopeCode.NON_ATTRIBUTION) == "scope.non_attribution"


def test_an_unregistered_code_raises_where_codes_are_strict():
    with override_settings(STRICT_VIOLATION_CODES=True), pytest.raises(UnknownCode):
        RuleViolation("scope.non_atribution", "a misspelt code")


def test_an_unregistered_code_is_logged_in_production():
    with (
        override_settings(STRICT_VIOLATION_CODES=False),
        TestCase().assertLogs("claimsdb.codes", logging.ERROR) as logged,
    ):
        violation = RuleViolation("scope.non_atribution", "a misspelt code")
    assert violation.code == "scope.non_atribution"
    assert "scope.non_atribution" in logged.output[0]


# --- every code written as a string in the tree ------------------------------------------------


def code_literals(source: str) -> Iterator[tuple[int, str]]:
    """The string literals of ``source`` that are codes: shaped like one of a registered
    family (``scope.…``), the first argument of a call that takes a code, or ``code=``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if CODE_SHAPE.fullmatch(text) and text.split(".")[0] in PREFIXES:
                yield node.lineno, text
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            arguments = [k.value for k in node.keywords if k.arg == "code"]
            if name in CODE_TAKERS and node.args:
                arguments.append(node.args[0])
            for argument in arguments:
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    yield argument.lineno, argument.value


def unregistered(source: str) -> list[tuple[int, str]]:
    return sorted({(line, text) for line, text in code_literals(source) if text not in REGISTERED})


def test_the_scan_finds_misspelt_codes():
    source = (
        'RuleViolation("scope.non_atribution", "m")\n'
        'RuleViolation("scpoe.non_attribution", "m")\n'
        'CODE = "signin.throttle"\n'
        'raise ValidationError("m", code="invalidd")\n'
        'RuleViolation(ScopeCode.NON_ATTRIBUTION, "m")\n'
        'RuleViolation("revision.stale", "m")\n'
        'TEMPLATE = "base.html"\n'
    )
    assert unregistered(source) == [
        (1, "scope.non_atribution"),
        (2, "scpoe.non_attribution"),
        (3, "signin.throttle"),
        (4, "invalidd"),
    ]


def test_every_code_written_in_the_tree_is_registered():
    found = {}
    for path in sorted((ROOT / "claimsdb").rglob("*.py")):
        problems = unregistered(path.read_text(encoding="utf-8"))
        if problems:
            found[str(path.relative_to(ROOT))] = problems
    assert found == {}
