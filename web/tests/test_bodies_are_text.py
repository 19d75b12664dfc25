"""A body is shown as text wherever it appears, sources link only to http(s), and pages carry the CSP."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from web.provenance import safe_source_url
from web.tests.factories import SCRIPT_BODY, person_fact

TEMPLATES = Path(settings.BASE_DIR) / "templates"
ESCAPED = "&lt;script&gt;window.__pwned = 1&lt;/script&gt;"


def test_markup_in_a_body_is_escaped_on_every_page_that_shows_it(client, owner, seeded):
    client.force_login(owner)
    memory = seeded.script
    pages = [
        reverse("web:memory-list"),
        reverse("web:memory-list") + "?q=click",
        reverse("web:memory-detail", args=[memory.pk]),
        reverse("web:memory-correct", args=[memory.pk]),
        reverse("web:memory-forget", args=[memory.pk]),
    ]
    for url in pages:
        page = client.get(url).content.decode()
        assert ESCAPED in page, url
        assert "<script>" not in page and "<img src=x" not in page and "<b>bold" not in page, url
        assert 'href="javascript:' not in page, url


def test_markup_about_a_person_is_escaped_in_their_export_table(client, org, member):
    person_fact(organisation=org, person=member, body=SCRIPT_BODY)
    client.force_login(member)
    page = client.get(reverse("web:about-me")).content.decode()
    assert ESCAPED in page and "<script>" not in page


@pytest.mark.parametrize(
    ("ref", "link"),
    [
        ("https://chat.example.com/archives/C1/p2", True),
        ("http://wiki.example.org/page?a=1&b=2", True),
        ("javascript:alert(1)", False),
        ("JavaScript:alert(1)", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("//evil.example/path", False),
        ("/me/memories", False),
        ("https://", False),
        ("https://exa mple.com", False),
        ("msg:1700000000.1234", False),
    ],
)
def test_only_http_and_https_sources_become_links(ref, link):
    assert (safe_source_url(ref) is not None) is link


def test_a_javascript_source_is_shown_as_text_not_a_link(client, org, member):
    memory = person_fact(organisation=org, person=member, body="Likes jazz", source_ref="javascript:alert(1)")
    client.force_login(member)
    page = client.get(reverse("web:memory-detail", args=[memory.pk])).content.decode()
    assert "<code>javascript:alert(1)</code>" in page
    assert 'href="javascript:' not in page


def test_pages_carry_the_content_security_policy(client, member, seeded):
    client.force_login(member)
    for url in (reverse("web:login"), reverse("web:memory-list"), reverse("web:about-me")):
        response = client.get(url)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy


def test_templates_hold_no_inline_script_style_or_handlers():
    """The CSP forbids them; a template that used one would break silently in the browser."""
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        assert "<script" not in text, template
        assert "<style" not in text and " style=" not in text, template
        assert not re.search(r"\son[a-z]+=", text), template
        assert "|safe" not in text.replace("field.help_text|safe", ""), template
