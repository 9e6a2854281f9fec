"""Helpers for the web tests (no tests here): read forms out of pages as a browser would,
and check that HTML is inert."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from django.contrib.auth.models import User
from django.test import Client

from claimsdb.models import Revision


@dataclass
class PageForm:
    action: str
    method: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    buttons: list[tuple[str, str, str]] = field(default_factory=list)  # name, value, formaction

    def data(self, changes: dict | None = None, **named) -> dict[str, list[str]]:
        """The values a browser would submit, with ``changes`` (name → value, list, or None
        to leave the field out, as an unticked checkbox is left out)."""
        values: dict[str, list[str]] = {}
        for name, value in self.fields:
            values.setdefault(name, []).append(value)
        for name, value in {**(changes or {}), **named}.items():
            if value is None:
                values.pop(name, None)
            else:
                values[name] = value if isinstance(value, list) else [str(value)]
        return values

    def names(self) -> set[str]:
        return {name for name, _ in self.fields}


class _FormParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms: list[PageForm] = []
        self.current: PageForm | None = None
        self.select: tuple[str, bool] | None = None
        self.select_options: list[tuple[str, bool]] = []
        self.textarea: str | None = None
        self.text = ""
        self.option_value: str | None = None
        self.option_selected = False
        self.option_text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.current = PageForm(a.get("action") or "", (a.get("method") or "get").lower())
            self.forms.append(self.current)
        if self.current is None:
            return
        if tag == "input":
            kind = (a.get("type") or "text").lower()
            name = a.get("name")
            if not name or "disabled" in a:
                return
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.current.fields.append((name, a.get("value", "on")))
            elif kind in ("submit", "button", "image", "reset"):
                self.current.buttons.append((name, a.get("value", ""), a.get("formaction", "")))
            else:
                self.current.fields.append((name, a.get("value", "")))
        elif tag == "button":
            if a.get("name"):
                self.current.buttons.append(
                    (a["name"], a.get("value", ""), a.get("formaction", ""))
                )
        elif tag == "select":
            if a.get("name") and "disabled" not in a:
                self.select = (a["name"], "multiple" in a)
                self.select_options = []
        elif tag == "option" and self.select:
            self.option_value = a.get("value")
            self.option_selected = "selected" in a
            self.option_text = ""
        elif tag == "textarea":
            if a.get("name") and "disabled" not in a:
                self.textarea = a["name"]
                self.text = ""

    def handle_data(self, data):
        if self.textarea is not None:
            self.text += data
        if self.option_value is None and self.select:
            self.option_text += data

    def handle_endtag(self, tag):
        if tag == "form":
            self.current = None
        elif tag == "option" and self.select:
            value = self.option_value if self.option_value is not None else self.option_text
            self.select_options.append((value, self.option_selected))
            self.option_value = None
        elif tag == "select" and self.select and self.current is not None:
            name, multiple = self.select
            chosen = [v for v, selected in self.select_options if selected]
            if not chosen and not multiple and self.select_options:
                chosen = [self.select_options[0][0]]
            self.current.fields.extend((name, v) for v in chosen)
            self.select = None
        elif tag == "textarea" and self.textarea is not None and self.current is not None:
            # browsers drop one leading newline of a textarea's content
            self.current.fields.append((self.textarea, self.text.removeprefix("\n")))
            self.textarea = None


def page_forms(html: str) -> list[PageForm]:
    parser = _FormParser()
    parser.feed(html)
    return parser.forms


def edit_form(html: str) -> PageForm:
    """The page's POST form that carries a summary (the save form)."""
    for form in page_forms(html):
        if form.method == "post" and "summary" in form.names():
            return form
    raise AssertionError("no save form on the page")


def signed_in(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def revision_count() -> int:
    return Revision.objects.count()


def text_of(html: str) -> str:
    """Visible text, tags removed, whitespace collapsed (for 'the message is shown')."""

    class Text(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []

        def handle_data(self, data):
            self.parts.append(data)

    parser = Text()
    parser.feed(html)
    return re.sub(r"\s+", " ", " ".join(parser.parts))


def field_block(html: str, field_name: str) -> str:
    """The HTML of the field wrapper rendered for ``field_name`` (``id="field-<name>"``)."""
    match = re.search(
        rf'<(div|fieldset) class="[^"]*" id="field-{re.escape(field_name)}">(.*?)</\1>',
        html,
        re.S,
    )
    assert match, f"no field {field_name} on the page"
    return match.group(2)


class InertChecker(HTMLParser):
    """Collects what could run: script elements, event-handler attributes, and URLs with a
    scheme other than http(s)/mailto in attributes that load or navigate."""

    URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "srcset", "data"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        self._check(tag, attrs)

    def handle_startendtag(self, tag, attrs):
        self._check(tag, attrs)

    def _check(self, tag, attrs):
        if tag in ("script", "iframe", "object", "embed", "svg", "math", "img", "base", "meta"):
            if tag == "meta" and all(k in ("name", "content", "charset") for k, _ in attrs):
                pass
            else:
                self.problems.append(f"<{tag}> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"{name}= on <{tag}>")
            if name in ("style",):
                self.problems.append(f"inline style on <{tag}>")
            if name in self.URL_ATTRIBUTES and value is not None:
                scheme = re.sub(r"[\x00-\x20]", "", value).lower().split(":", 1)
                if (
                    len(scheme) == 2
                    and "/" not in scheme[0]
                    and scheme[0]
                    not in (
                        "http",
                        "https",
                        "mailto",
                    )
                ):
                    self.problems.append(f"{name}={value!r} on <{tag}>")


def assert_inert(html: str) -> None:
    checker = InertChecker()
    checker.feed(html)
    assert checker.problems == [], checker.problems
    assert "<script" not in html.lower()
