"""manage.py import_repro_results: the examples, the summary table, problems, exit status."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from claimsdb.models import ImportReport, ReproductionRun, Revision, TrialRow

from .repro_examples import EXAMPLES, FIXTURES, VALID_SMALL


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_repro_results", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def run_refused(*args: str) -> tuple[str, str, CommandError]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("import_repro_results", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue(), refused.value


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_the_examples_import_as_their_readme_says(example, seeded, analyst):
    args = (str(example.path), "--user", "analyst")
    if example.accepted:
        out, _ = run(*args)
        assert "imported" in out
        run_row = ReproductionRun.objects.get(run_id=example.run_id)
        assert run_row.scenarios.count() == example.scenarios
        assert TrialRow.objects.count() == example.trial_rows
    else:
        out, _, refused = run_refused(*args)
        assert refused.returncode == 1
        for code, path in example.problems:
            assert f"{path}: {code}: " in out
        assert not ReproductionRun.objects.exists()


def test_several_files_give_one_table_and_fail_if_any_is_refused(seeded, analyst):
    files = [str(e.path) for e in EXAMPLES]

    out, _, refused = run_refused(*files, "--user", "analyst")

    lines = out.splitlines()
    assert lines[0].split() == [
        "file",
        "run",
        "case",
        "outcome",
        "scenarios",
        "trial",
        "rows",
        "revision",
    ]
    for example in EXAMPLES:
        row = next(line for line in lines if line.startswith(str(example.path)))
        assert ("imported" if example.accepted else "refused") in row
        assert f"{example.trial_rows:,}" in row.split()
    assert "2 of 4 files refused" in str(refused)
    assert ReproductionRun.objects.count() == 2


def test_reimport_and_replacement(seeded, analyst):
    run(str(VALID_SMALL), "--user", "analyst")
    out, _ = run(str(VALID_SMALL), "--user", "analyst")
    assert "unchanged" in out

    replacement = str(FIXTURES / "db" / "replacement.json")
    out, _, _ = run_refused(replacement, "--user", "analyst")
    assert "run_id: import.run_conflict: " in out

    out, _ = run(replacement, "--user", "analyst", "--replace", "--summary", "Corrected rerun")
    assert "replaced" in out
    assert (
        Revision.objects.filter(action="import")
        .latest("number")
        .summary.startswith("Corrected rerun")
    )


def test_dry_run_writes_nothing(seeded, analyst):
    out, _ = run(str(VALID_SMALL), "--user", "analyst", "--dry-run")
    assert "would import" in out
    assert not ReproductionRun.objects.exists()
    assert ImportReport.objects.get().dry_run


def test_the_user_must_exist_and_may_import(seeded, viewer):
    with pytest.raises(CommandError, match="no user named"):
        run(str(VALID_SMALL), "--user", "ghost")
    out, _, _ = run_refused(str(VALID_SMALL), "--user", "viewer")
    assert "permission.denied" in out


def test_a_missing_file_is_named(seeded, analyst, tmp_path):
    with pytest.raises(CommandError, match="missing.json"):
        run(str(tmp_path / "missing.json"), "--user", "analyst")


def test_progress_bar_on_request_only(seeded, analyst):
    _, err = run(str(VALID_SMALL), "--user", "analyst", "--progress", "--dry-run")
    assert "checking" in err and "100%" in err
    _, err = run(str(VALID_SMALL), "--user", "analyst", "--dry-run")
    assert err == ""  # standard error is not a terminal here


def test_standard_input(seeded, analyst, monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO(VALID_SMALL.read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    out, _ = run("-", "--user", "analyst")
    assert "<stdin>" in out and "imported" in out


def test_json_output(seeded, analyst):
    out, _ = run(str(VALID_SMALL), "--user", "analyst", "--json")
    (report,) = json.loads(out)
    assert report["outcome"] == "imported"
    assert report["revision"] == Revision.objects.latest("number").number
    assert Path(report["filename"]) == VALID_SMALL
