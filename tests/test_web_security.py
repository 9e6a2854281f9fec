"""Security headers, sign-in, and templates without inline script or style."""

from __future__ import annotations

import re
from pathlib import Path

from django.test import Client

from .support import ALL_EDIT_PAGES, REVIEW_PAGES, page_forms, signed_in

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def test_pages_carry_the_security_headers(seeded, viewer):
    response = signed_in(viewer).get("/cases/CP22-003/", secure=True)
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "object-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "max-age=" in response["Strict-Transport-Security"]


def test_no_template_has_inline_script_style_or_handlers():
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        # only the app's own script files, loaded by src, with nothing inline
        assert not re.search(r"<script(?![^>]*\ssrc=\"\{% static 'claimsdb/)", text), path
        assert not re.search(r"<script[^>]*>[^<]", text), path
        assert "<style" not in text, path
        assert not re.search(r"\sstyle=", text), path
        assert not re.search(r"\son[a-z]+=", text), path


def test_every_post_form_carries_a_csrf_token(seeded, reviewer):
    client = signed_in(reviewer)
    for url in [*ALL_EDIT_PAGES, *REVIEW_PAGES, "/cases/CP22-003/", "/cases/CP22-003/claims/"]:
        for form in page_forms(client.get(url).content.decode()):
            if form.method == "post":
                assert "csrfmiddlewaretoken" in form.names(), url


def test_sign_in_and_back_to_the_page(seeded, analyst):
    client = Client()
    response = client.get("/cases/CP22-003/edit/")
    assert response.status_code == 302
    login_url = response["Location"]
    page = client.get(login_url)
    assert page.status_code == 200
    response = client.post(
        login_url,
        {"username": "analyst", "password": "pw-analyst", "next": "/cases/CP22-003/edit/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/cases/CP22-003/edit/"
    assert client.get("/cases/CP22-003/edit/").status_code == 200


def test_the_sign_in_link_leads_back_to_the_page(seeded):
    html = Client().get("/cases/?tag=rdma").content.decode()
    assert 'href="/accounts/login/?next=/cases/%3Ftag%3Drdma">Sign in' in html


def test_static_css_is_served(seeded):
    response = Client().get("/static/claimsdb/site.css")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert b"@media print" in body
