"""The rows of the longest lists — the case list's fifty rows, a search's twenty hits — are
rendered by Jinja2 (``templates/rows/``), the rest of every page by Django's templates.

Django's template language spends several microseconds on each ``{{ value }}`` (a lookup
through the context's layers, localization, the lazy-string check of its escaping), and the
case list has some 760 of them: its rows took a third of the request's time at 10,000 cases.
Jinja2 compiles a template to Python and renders the same rows in a quarter of the time
(bench/list_render.py).

Escaping: every value a template writes (every ``{{ … }}``) goes through ``_escaped``, the
environment's ``finalize``. It escapes as Django's ``escape`` does — the markup is the same
bytes the Django templates gave (tests/test_web_list_rows.py) — and writes markup already
marked safe (``SafeString``, ``Markup``: anything with ``__html__``, such as a search's
highlighted excerpts) as it is. That is what autoescaping does; Jinja2's own is off only
because it would escape a second time, with markupsafe's spelling (``&#39;``, not Django's
``&#x27;``), and cost as much again. So these templates hold no macros (a macro's output,
written with ``{{ }}``, would be escaped twice): their markup is written out in them.
"""

from __future__ import annotations

import html
from typing import Any

import jinja2
from django.template import engines
from django.utils.safestring import SafeString, mark_safe

ENGINE = "rows"  # settings.TEMPLATES' NAME of the Jinja2 engine


def _escaped(value: Any) -> str:
    """A value as a template writes it: escaped as Django escapes it, unless it is markup
    already (``SafeString``, ``Markup``: anything with ``__html__``)."""
    if type(value) is str:  # most values: skip the look-up below
        return html.escape(value)
    markup = getattr(value, "__html__", None)
    return markup() if markup is not None else html.escape(str(value))


def environment(**options: Any) -> jinja2.Environment:
    """The engine's environment (settings.TEMPLATES ``OPTIONS["environment"]``): every value
    escaped by ``_escaped``, a template's last newline kept (as Django keeps it), and an
    undefined name an error rather than an empty string."""
    return jinja2.Environment(
        **{
            **options,  # Django's: the loader and reloading with DEBUG
            "autoescape": False,  # ``_escaped`` escapes every value instead: see above
            "finalize": _escaped,
            "keep_trailing_newline": True,
            "undefined": jinja2.StrictUndefined,
        }
    )


def render_rows(template_name: str, context: dict[str, Any]) -> SafeString:
    """``template_name`` of ``templates/rows/`` rendered with ``context``, as markup a
    Django template includes as it is (``{{ rows }}``)."""
    return mark_safe(engines[ENGINE].get_template(template_name).render(context))
