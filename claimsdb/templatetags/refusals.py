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


@register.filter
def rule_links(text) -> SafeString:
    escaped = str(conditional_escape(text))

    def link(match: re.Match) -> str:
        key = match.group(0)
        return f'<a href="{reverse("rule-detail", args=[key])}">{key}</a>'

    return mark_safe(RULE_KEY.sub(link, escaped))
