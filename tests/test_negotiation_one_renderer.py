"""The API's content negotiation (`lib.hot_path.OneRendererNegotiation`) answers what DRF's answers, and
answers the plain cases (one renderer, Accept of anything or JSON) without parsing the header."""

from __future__ import annotations

import pytest
from django.http import Http404
from rest_framework import exceptions, negotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIClient, APIRequestFactory

from lib.hot_path import OneRendererNegotiation

ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "application/json; indent=4",
    "application/*",
    "*/*;q=0.8",
    "text/html",
    "text/html, application/json;q=0.9",
    "",
    "application/json, */*",
]
QUERIES = ["", "?format=json", "?format=xml"]


def answer(negotiator, accept, query, renderers):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().post(f"/api/v1/recall{query}", **headers))
    try:
        renderer, media_type = negotiator.select_renderer(request, renderers)
    except (exceptions.NotAcceptable, Http404) as refused:
        return type(refused).__name__
    return type(renderer).__name__, media_type


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("kinds", [(JSONRenderer,), (JSONRenderer, BrowsableAPIRenderer)])
def test_every_accept_header_gets_drfs_answer(accept, query, kinds):
    renderers = [kind() for kind in kinds]
    assert answer(OneRendererNegotiation(), accept, query, renderers) == answer(
        negotiation.DefaultContentNegotiation(), accept, query, renderers
    )


@pytest.fixture
def parsed(monkeypatch):
    """How many media types DRF's negotiation parses while a test runs."""
    counted = {"media types": 0}
    original = negotiation._MediaType

    def counting(text):
        counted["media types"] += 1
        return original(text)

    monkeypatch.setattr(negotiation, "_MediaType", counting)
    return counted


def test_the_plain_cases_parse_nothing_and_the_others_are_drfs(parsed):
    renderers = [JSONRenderer()]
    for accept in (None, "*/*", "application/json"):
        assert answer(OneRendererNegotiation(), accept, "", renderers) == ("JSONRenderer", "application/json")
    assert parsed["media types"] == 0
    # The positive control: a header with parameters is DRF's to parse, and so is DRF's own negotiation.
    answer(OneRendererNegotiation(), "application/json; indent=4", "", renderers)
    assert parsed["media types"] > 0
    parsed["media types"] = 0
    answer(negotiation.DefaultContentNegotiation(), "*/*", "", renderers)
    assert parsed["media types"] > 0


@pytest.mark.django_db
def test_an_api_call_accepting_only_html_is_still_refused_in_the_error_shape():
    refused = APIClient().get("/api/v1/memories", HTTP_ACCEPT="text/html")
    assert refused.status_code == 406
    assert refused.json()["error"] == "not_acceptable"
    indented = APIClient().get("/api/v1/memories", HTTP_ACCEPT="application/json; indent=4")
    assert indented.status_code == 401 and indented.content.startswith(b'{\n    "error"')  # DRF's indent kept
