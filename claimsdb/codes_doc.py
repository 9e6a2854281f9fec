"""docs/codes.md, written from the codes registry (claimsdb/codes.py).

    python -m claimsdb.codes_doc           # rewrite docs/codes.md
    python -m claimsdb.codes_doc --check   # exit 1, changing nothing, if it is stale

After adding or rewording a code in claimsdb/codes.py, run the first and commit both files;
tests/test_readme.py fails while docs/codes.md differs from what this writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from claimsdb.codes import API_CODES, FAMILIES, Code, DrfCode

PATH = Path(__file__).resolve().parent.parent / "docs" / "codes.md"

INTRO = """\
# Violation codes

<!-- Written by `python -m claimsdb.codes_doc` from claimsdb/codes.py: edit the registry,
then run it; tests/test_readme.py fails while this file is stale. -->

Every refusal, on every write path, carries one of these codes: in an API error's
`errors[].code`, in an import report's `problems[].code`, in the output of the commands.
Codes are stable; tools match on them, never on the message beside them, which may be
reworded. Each family below is one `StrEnum` of `claimsdb/codes.py`.
"""


def render() -> str:
    """The whole of docs/codes.md."""
    return INTRO + "".join(_family(family) for family in FAMILIES)


def _family(family: type[Code]) -> str:
    prefixes = {code.split(".")[0] for code in family if "." in code}
    title = f"`{prefixes.pop()}.*`" if prefixes else "without a prefix"
    about = " ".join((family.__doc__ or "").split()).replace("``", "`")
    if family is DrfCode:  # never reported by the API: say what it reports instead
        head = "| code | meaning | the API reports |\n| --- | --- | --- |\n"
        rows = "".join(
            f"| `{code}` | {_cell(code.doc)} | `{API_CODES[code]}` |\n" for code in DrfCode
        )
    else:
        head = "| code | meaning |\n| --- | --- |\n"
        rows = "".join(f"| `{code}` | {_cell(code.doc)} |\n" for code in family)
    return f"\n## {title} — `{family.__name__}`\n\n{about}\n\n" + head + rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claimsdb.codes_doc", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only say whether it is stale")
    check = parser.parse_args(argv).check
    text = render()
    current = PATH.read_text(encoding="utf-8") if PATH.exists() else None
    if current == text:
        return 0
    if check:
        print(f"{PATH} is stale: run python -m claimsdb.codes_doc", file=sys.stderr)
        return 1
    PATH.write_text(text, encoding="utf-8")
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
