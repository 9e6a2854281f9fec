"""The parser's two passes over a results file.

``parse_results`` checks a whole file in one streaming pass and returns every problem it
finds; ``trial_rows`` is the second pass, which reads the rows of an accepted file for
storing. Neither touches the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ijson

from claimsdb.codes import ReproCode

from . import messages
from .content_hash import ContentDigest
from .format import SUPPORTED_FORMATS
from .header import check_header
from .problems import Problem, ProblemLog
from .run import ParsedRun
from .scanner import CountingReader, NotAnObject, Readable, Scan, TooDeep, TooLarge

BUF_SIZE = 256 * 1024


def parse_results(
    stream: Readable, digest: ContentDigest | None = None
) -> tuple[ParsedRun | None, list[Problem]]:
    """Check a whole results file in one streaming pass (which also feeds ``digest``, the
    file's identity, when one is given).

    Returns the run (None when the file is not readable as a `repro-results/1` object) and
    every problem found. Memory stays flat in the number of trial rows: rows are tallied per
    scenario into counters and a bit set of the trial numbers seen, never kept.
    """
    log = ProblemLog()
    scan = Scan(log)
    source = CountingReader(stream)
    try:
        events = ijson.basic_parse(source, buf_size=BUF_SIZE, use_float=True)
        scan.read_file(digest.watch(events) if digest is not None else events)
    except NotAnObject as error:
        return None, [Problem(ReproCode.MALFORMED, error.message, "")]
    except TooDeep as error:
        return None, [Problem(ReproCode.MALFORMED, error.message, error.path)]
    except TooLarge as error:
        return None, [Problem(error.code, error.message, error.path)]
    except ijson.JSONError as error:
        message = messages.json_error(error, source.offset, source.saw_content)
        return None, [Problem(ReproCode.MALFORMED, message, scan.where)]
    header = scan.header
    if "format" in header and header["format"] not in SUPPORTED_FORMATS:
        return None, [_format_problem(header["format"])]
    if "format" in header:
        log.format = header["format"]
    check_header(header, log)
    scan.finish()
    return ParsedRun.from_scan(scan), log.problems()


def trial_rows(stream: Readable) -> Iterator[dict[str, Any]]:
    """The trial rows of a file that ``parse_results`` accepted, in file order, as objects
    (numbers that are not whole read as floats)."""
    return ijson.items(stream, "trials.item", buf_size=BUF_SIZE, use_float=True)


def _format_problem(value: Any) -> Problem:
    readable = ", ".join(SUPPORTED_FORMATS)
    return Problem(
        ReproCode.FORMAT_UNSUPPORTED,
        f"The file's format is {messages.show(value)}; this importer reads only {readable}.",
        "format",
    )
