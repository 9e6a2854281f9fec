"""Walk the URL configuration, so that a test covers every page, including ones added later.

``walk_routes`` lists every endpoint of the URL configuration whose path starts with one of
the given prefixes (``path()`` and ``re_path()`` patterns alike, through every ``include``);
``route_urls`` fills a route's parameters from a table keyed by parameter name. The web
UI's test walks everything outside ``admin/`` and ``api/``; the API's can walk ``api/``.

No tests here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.utils.regex_helper import normalize


@dataclass(frozen=True)
class Route:
    """One endpoint of the URL configuration."""

    route: str  # the patterns joined as Django joins them: "cases/<str:key>/history/"
    name: str | None  # the URL name, namespaced ("case-history", "admin:index")
    parameters: tuple[str, ...]  # the named parameters of the path, in order
    template: str  # "/cases/%(key)s/history/"

    def url(self, values: Mapping[str, object]) -> str:
        """The path with ``values`` (by parameter name) filled in, percent-encoded."""
        return self.template % {
            name: quote(str(values[name]), safe="/:@!$&'()*+,;=-._~") for name in self.parameters
        }


# A table entry: the values to try for a parameter, or a function of the route giving them
# (``key`` is a case key under cases/ and a source key under sources/).
ParameterValues = Sequence[object] | Callable[[Route], Sequence[object]]


def _endpoints(patterns, chain: tuple = (), namespace: str = "") -> Iterator[tuple[tuple, str]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _endpoints(pattern.url_patterns, (*chain, pattern), inner)
        elif isinstance(pattern, URLPattern):
            yield (*chain, pattern), namespace


def _route(chain: tuple, namespace: str) -> Route:
    text = "".join(str(p.pattern).removeprefix("^") for p in chain)
    regex = "".join(p.pattern.regex.pattern.removeprefix("^") for p in chain)
    named = [name for p in chain for name in p.pattern.regex.groupindex]
    # normalize() is what reverse() uses: each way of writing the path, with its parameters
    possibilities = normalize(regex)
    template, parameters = next(
        ((t, ps) for t, ps in possibilities if sorted(ps) == sorted(named)), possibilities[0]
    )
    name = chain[-1].name
    return Route(
        route=text,
        name=f"{namespace}{name}" if name else None,
        parameters=tuple(parameters),
        template="/" + template,
    )


def walk_routes(prefixes: Sequence[str] = ("",), *, exclude: Sequence[str] = ()) -> list[Route]:
    """Every endpoint whose route starts with one of ``prefixes`` and with none of
    ``exclude`` (routes have no leading slash: ``"api/"``, ``"admin/"``), in URL-conf order."""
    routes = []
    for chain, namespace in _endpoints(get_resolver().url_patterns):
        route = _route(chain, namespace)
        if route.route.startswith(tuple(prefixes)) and not route.route.startswith(tuple(exclude)):
            routes.append(route)
    return routes


def route_urls(route: Route, table: Mapping[str, ParameterValues]) -> list[str]:
    """Every URL of ``route`` with its parameters filled from ``table`` (each combination of
    the values given for them). A parameter missing from the table fails the test, saying to
    add it; a URL that resolves to another route fails it too (its values are wrong)."""
    missing = [name for name in route.parameters if name not in table]
    if missing:
        pytest.fail(
            f"The route {route.route!r} ({route.name}) has parameter(s) {', '.join(missing)} "
            "with no entry in the parameter table: add one (a value that names a record of "
            "the test data) so that the page is fetched."
        )
    choices = []
    for name in route.parameters:
        values = table[name]
        values = values(route) if callable(values) else values
        if not values:
            pytest.fail(f"The parameter table gives no value for {name!r} in {route.route!r}")
        choices.append([(name, value) for value in values])
    urls = []
    for combination in itertools.product(*choices):
        url = route.url(dict(combination))
        match = resolve(url)
        if match.route.removeprefix("^") != route.route:
            pytest.fail(
                f"{url}, made for the route {route.route!r}, resolves to {match.route!r}: "
                "give its parameters values that reach it"
            )
        urls.append(url)
    return urls
