"""The admin is Archivist's console: branded, grammatical, and offering no action that would fail."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.test import RequestFactory

pytestmark = pytest.mark.django_db


def test_the_admin_is_branded_archivist(client, superuser):
    client.force_login(superuser)
    page = client.get("/admin/").content.decode()
    assert "<title>Stewards&#x27; and operators&#x27; console | Archivist</title>" in page
    assert ">Archivist</a>" in page
    assert "Django administration" not in page and "Django site admin" not in page


def test_model_names_are_grammatical_plurals(client, superuser):
    client.force_login(superuser)
    page = client.get("/admin/").content.decode()
    assert ">Memories</a>" in page and "Memorys" not in page
    from django.apps import apps

    plurals = [str(model._meta.verbose_name_plural) for model in apps.get_models()]
    # Django's default adds an "s": "memorys", "indexs", "statuss".
    assert [p for p in plurals if re.search(r"([^aeiou]ys|xs|ss)$", p)] == []
    assert "tenant vector indexes" in plurals and "claim statuses" in plurals


def test_no_admin_offers_a_bulk_delete(superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    offered = {
        model._meta.label: list(model_admin.get_actions(request)) for model, model_admin in admin.site._registry.items()
    }
    assert not [label for label, actions in offered.items() if "delete_selected" in actions]
    # Positive control: the actions that do work are still offered.
    assert "revoke" in offered["accounts.AgentToken"]
