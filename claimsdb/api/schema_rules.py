"""What the views check about parameters, stated in the OpenAPI schema.

A drf-spectacular postprocessing hook (``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]``) run
over every operation, whatever view declared it: a request the schema calls valid must never
be refused for its shape, and one it calls invalid must be refused. It states:

* no NUL character in any query parameter (the views refuse it: no database stores it);
* a required ``summary`` holds something besides white space (``revision.summary_required``);
* ``If-Match`` is ``*`` or a list of entity tags (``revision.precondition_invalid``);
* the smallest number each integer query parameter takes (``page``, ``page_size``…);
* every request body is required; the bodies checked field by field admit no other field;
* a 400 in the ``Error`` shape for every operation with query parameters (a malformed one is
  refused, on any endpoint);
* a 413 ``request.too_large`` for every operation that reads a body (docs/limits.md).
"""

from __future__ import annotations

from typing import Any

NO_NUL = "^[^\\u0000]*$"
NOT_BLANK = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"
# RFC 9110 §13.1.1: "*" or a comma-separated list of (weak or strong) entity tags
ENTITY_TAGS = '^ *(\\*|(W/)?"[^"]*"( *, *(W/)?"[^"]*")*) *$'
INTEGER_MINIMUMS = {"page": 1, "page_size": 1, "since": 0, "from": 1, "to": 1, "position": 0}
# the largest integer a query parameter compared with a database column takes (a bigint)
INTEGER_MAXIMUM = 2**63 - 1
# Request bodies whose views refuse fields they do not know (document.unknown_field).
CLOSED_REQUEST_COMPONENTS = ("PublishRequestRequest",)


def describe_parameters(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    for item in result.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                _describe(parameter)
            responses = operation.setdefault("responses", {})
            if "requestBody" in operation:
                # every write reads its body: without one it is refused, and beyond the
                # limits it is refused whole
                operation["requestBody"]["required"] = True
                responses.setdefault(
                    "413",
                    {
                        "description": "the body is larger than the limit "
                        "(`request.too_large`, docs/limits.md)",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                        },
                    },
                )
            takes_query = any(p.get("in") == "query" for p in operation.get("parameters", []))
            if takes_query and "400" not in responses:
                responses["400"] = {
                    "description": "a query parameter is malformed (its name is the path)",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                }
    schemas = result.get("components", {}).get("schemas", {})
    for name in CLOSED_REQUEST_COMPONENTS:
        if name in schemas:
            schemas[name]["additionalProperties"] = False
    return result


def _describe(parameter: dict[str, Any]) -> None:
    schema = parameter.get("schema")
    if not isinstance(schema, dict):
        return
    name, where = parameter.get("name"), parameter.get("in")
    if where == "header" and name == "If-Match":
        schema["pattern"] = ENTITY_TAGS
    elif where == "query" and schema.get("type") == "string":
        if name == "summary" and parameter.get("required"):
            schema["minLength"] = 1
            schema["pattern"] = NOT_BLANK
        elif "enum" not in schema and "pattern" not in schema:
            schema["pattern"] = NO_NUL
        elif "enum" in schema and "" not in schema["enum"]:
            schema["enum"] = [*schema["enum"], ""]  # an empty filter is no filter
    elif where == "query" and schema.get("type") == "integer" and name in INTEGER_MINIMUMS:
        schema.setdefault("minimum", INTEGER_MINIMUMS[name])
        if name not in {"page", "page_size"}:  # a larger page_size reads as its maximum
            schema.setdefault("maximum", INTEGER_MAXIMUM)
    elif where == "query" and schema.get("type") == "array":
        items = schema.get("items")
        if isinstance(items, dict) and items.get("type") == "string" and "enum" not in items:
            items.setdefault("pattern", NO_NUL)
