"""The one error shape of the API.

Every error response, whatever raised it, is::

    {"status": 400, "title": "The change was refused",
     "errors": [{"code": "scope.non_attribution", "message": "…",
                 "path": "attributions[0].figure"}]}

``code`` is stable (DESIGN.md §3 codes, ``revision.stale``, ``permission.denied``, and DRF's
own codes such as ``not_authenticated``); ``path`` points into the document sent (empty
when the problem is the request as a whole); ``record`` appears when the problem lies in
another record than the one written.
"""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework.response import Response

from claimsdb.records import RuleViolation


def error_body(status: int, title: str, violations: Iterable[RuleViolation]) -> dict:
    return {"status": status, "title": title, "errors": [v.as_dict() for v in violations]}


def error_response(
    status: int, title: str, violations: Iterable[RuleViolation], headers: dict | None = None
) -> Response:
    return Response(error_body(status, title, violations), status=status, headers=headers)
