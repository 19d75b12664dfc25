"""Owners turn their organisation's episodes on and off on its page; each change is audited with who made it;
a member cannot, and a value that is neither on nor off is refused naming the field."""

from __future__ import annotations

from django.urls import reverse

from accounts.models import AccountAudit, Organisation


def test_an_owner_turns_episodes_off_and_on_and_each_change_is_audited(client, org, owner):
    client.force_login(owner)
    page = client.get(reverse("web:organisation"))
    assert page.status_code == 200 and "Episodes are <strong>on</strong>" in page.content.decode()
    response = client.post(reverse("web:organisation"), {"episodes": "off"}, follow=True)
    assert "Episodes are <strong>off</strong>" in response.content.decode()
    assert Organisation.objects.get(pk=org.pk).thread_episodes is False
    client.post(reverse("web:organisation"), {"episodes": "on"})
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True
    rows = AccountAudit.objects.filter(organisation=org, action="switch").order_by("id")
    assert [(row.actor_id, row.detail["on"]) for row in rows] == [(owner.pk, False), (owner.pk, True)]
    people_page = client.get(reverse("web:people")).content.decode()
    assert "Thread episodes turned off" in people_page and "Thread episodes turned on" in people_page


def test_a_value_neither_on_nor_off_is_a_400_naming_the_field(client, org, owner):
    client.force_login(owner)
    response = client.post(reverse("web:organisation"), {"episodes": "maybe"})
    assert response.status_code == 400
    assert "episodes: &#x27;maybe&#x27; is not one of on, off." in response.content.decode()
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True


def test_a_member_can_neither_see_nor_change_it(client, org, owner, member):
    client.force_login(member)
    assert client.get(reverse("web:organisation")).status_code == 403
    assert client.post(reverse("web:organisation"), {"episodes": "off"}).status_code == 403
    assert Organisation.objects.get(pk=org.pk).thread_episodes is True
    client.force_login(owner)  # the positive control: the same POST by an owner changes it
    client.post(reverse("web:organisation"), {"episodes": "off"})
    assert Organisation.objects.get(pk=org.pk).thread_episodes is False
