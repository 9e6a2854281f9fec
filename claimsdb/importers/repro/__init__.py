"""The `repro-results/1` format (docs/repro-results-1.md): a pure streaming parser.

File in, unsaved values out: nothing here touches the database. ``parse_results`` checks a
whole file in one streaming pass and returns every problem, each with a stable code
(``ReproCode``) and the JSON path it concerns; ``trial_rows`` reads the rows of an accepted
file again for storing. Whether `case` and `claims` exist, and whether `run_id` was imported
before, is for the database-side importer (``importers/repro_results.py``) to decide.

The modules: ``format`` (the format's vocabularies and patterns), ``scanner`` (the one pass
over the JSON events), ``tally`` (what each scenario's rows add up to), ``header`` and
``field_check`` (the header, described and checked in the records' field vocabulary),
``problems`` and ``messages`` (what is reported, and in which words), ``run`` (what the
pass learned), ``parse`` (the two passes).
"""

from .format import FORMAT, SUPPORTED_FORMATS
from .parse import parse_results, trial_rows
from .problems import MAX_ROW_PROBLEMS, Problem
from .run import ParsedRun, ScenarioSummary

__all__ = [
    "FORMAT",
    "MAX_ROW_PROBLEMS",
    "SUPPORTED_FORMATS",
    "ParsedRun",
    "Problem",
    "ScenarioSummary",
    "parse_results",
    "trial_rows",
]
