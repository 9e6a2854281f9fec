"""``{% if user|may_manage_webhooks %}``: whether to show the webhooks link (the decision is
``access.may_manage_webhooks``; the role is read with the user, so it costs no query)."""

from django import template

from claimsdb import access

register = template.Library()


@register.filter
def may_manage_webhooks(user: access.User) -> bool:
    return access.may_manage_webhooks(user)
