"""``{{ message|rule_links }}``: a refusal's text with each scope rule key linked to the rule's
page, so the analyst can read the rule that refused the change."""

from __future__ import annotations

import re

from django import template
from django.urls import reverse
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from claimsdb import choices

register = template.Library()

# a rule key as choices.RULE_KEY_PATTERN has it, found inside a sentence
RULE_KEY = re.compile(r"\b" + choices.RULE_KEY_PATTERN.strip("^$"))
# the vocabulary a refusal names by its key (relation kinds, figure scopes, roles):
# shown as code, so that "same_event" does not read as "same event"
VOCABULARY = re.compile(
    r"\b("
    + "|".join(
        sorted(
            {
                value
                for family in (
                    choices.RelationKind,
                    choices.AttributionRole,
                    choices.ClaimStatus,
                    choices.ClaimBasis,
                )
                for value in family.values
                if "_" in value
            },
            key=len,
            reverse=True,
        )
    )
    + r")\b"
)


@register.filter
def rule_links(text) -> SafeString:
    escaped = str(conditional_escape(text))

    def link(match: re.Match) -> str:
        key = match.group(0)
        return f'<a href="{reverse("rule-detail", args=[key])}">{key}</a>'

    linked = RULE_KEY.sub(link, escaped)
    # vocabulary outside the links (a rule key may itself hold such a word)
    pieces = re.split(r"(<a [^>]*>.*?</a>)", linked)
    return mark_safe(
        "".join(
            piece if piece.startswith("<a ") else VOCABULARY.sub(r"<code>\1</code>", piece)
            for piece in pieces
        )
    )
