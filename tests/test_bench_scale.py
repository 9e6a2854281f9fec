"""The scale benchmark (bench/scale.py): its verdicts, and a tiny run end to end."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "scale.py"

# Every row of the table, by the start of its measure.
MEASURES = (
    "case update at 24 vs 12 cases",
    "load_records rate at 24 vs 12 cases",
    "load_records rate vs raw COPY of its rows",
    "case update vs raw rows + revision",
    "GET /api/v1/cases/<key>/ vs psycopg + json.dumps",
    "GET /cases/ vs bare SQL page",
    "search ?q=",
    "GET /review/ vs bare SQL page",
    "GET /review/ halfway down vs bare SQL page",
    "GET /cases/ signed out vs /api/v1/cases/ at 10 users",
    "verify_history vs stream + sha256",
    "publish_release rate at 24 vs 12 cases",
    "export_records rate at 24 vs 12 cases",
    "check_rules rate at 24 vs 12 cases",
    "writes/s at 4 vs 1 concurrent writers (24 cases, gunicorn)",
    "ledger lock held, share of a write's time (1 writer, median ms)",
    *(
        f"{command} peak memory ({kind}), 24 vs 12"
        for command in (
            "load_records",
            "publish_release",
            "export_records",
            "verify_history",
            "check_rules",
        )
        for kind in ("tracemalloc", "ru_maxrss")
    ),
)


def load_script():
    spec = importlib.util.spec_from_file_location("bench_scale", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_verdicts_and_percentiles():
    scale = load_script()
    assert scale.Row("m", "", "", 1.5, "≤ 1.5").met == "met"
    assert scale.Row("m", "", "", 1.51, "≤ 1.5").met == "NOT MET"
    assert scale.Row("m", "", "", 0.34, "≥ 0.33").met == "met"
    assert scale.Row("m", "", "", 0.2, "≥ 0.33").met == "NOT MET"
    assert scale.Row("m", "", "", 9.0, "").met == "–"
    assert scale.p95([float(n) for n in range(1, 101)]) == 95.0
    assert scale.p95([3.0]) == 3.0
    table = scale.format_table([scale.Row("a measure", "1 ms", "2 ms", 0.5, "≤ 2")])
    assert table.splitlines()[2].split() == [
        "a",
        "measure",
        "1",
        "ms",
        "2",
        "ms",
        "0.50",
        "≤",
        "2",
        "met",
    ]


def test_refuses_sqlite():
    env = {**os.environ, "DATABASE_URL": "sqlite:///unused.sqlite3"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "needs DATABASE_URL=postgres://" in result.stderr


@pytest.mark.postgres(
    reason="the benchmark measures PostgreSQL (COPY, GIN indexes, template databases)"
)
@pytest.mark.parametrize("traced", [True, False], ids=["tracemalloc", "ru_maxrss-only"])
def test_quick_run_prints_every_row_and_drops_its_databases(traced):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "claimsdb.settings"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", *([] if traced else ["--no-tracemalloc"])],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stdout.splitlines()
    for measure in MEASURES:
        rows = [line for line in lines if line.startswith(measure)]
        if "tracemalloc" in measure and not traced:
            assert rows == []
            continue
        (row,) = rows
        # value, baseline, a ratio and a verdict, all measured
        assert re.search(r"\s\d+\.\d\d\s+(≤ [\d.]+|≥ [\d.]+|–)\s+(met|NOT MET|–)$", row), row
    assert re.fullmatch(rf"\d+ of {23 if traced else 18} targets met", lines[-1])
    # the write-throughput table: a row per number of concurrent writers, all measured
    at = lines.index("Write throughput at 24 cases (PUT with If-Match, distinct cases):")
    assert lines[at + 1].split()[:2] == ["concurrent", "writers"]
    for writers, line in zip(("1", "2", "4", "8"), lines[at + 3 : at + 7], strict=True):
        cells = line.split()
        assert cells[0] == writers, line
        assert float(cells[1].replace(",", "")) > 0 and float(cells[-1]) > 0, line
    # each measurement is logged as it is made, for a run that is cut short
    assert re.search(r"load_records: 24 cases .*\n.*  seconds [\d.]+, maxrss", result.stderr)
    (prefix,) = re.findall(r"migrating the template database (\S+)_template", result.stderr)
    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(url.replace("postgres://", "postgresql://", 1)) as admin:
        names = [row[0] for row in admin.execute("SELECT datname FROM pg_database")]
    assert not [name for name in names if name.startswith(prefix)]
