"""The claim page: evidence as safe links, author and provenance, the supersede chain,
the full admission history, every field read-only, and only the decisions this steward may take."""

from __future__ import annotations

import pytest

from admissions.services import admission_decide, claim_promote, stance_create


def page_of(client, claim) -> str:
    response = client.get(f"/admin/admissions/systemclaim/{claim.pk}/change/")
    assert response.status_code == 200
    return response.content.decode()


def test_evidence_is_escaped_and_only_http_links_are_clickable(steward_client, make_claim):
    claim = make_claim(
        evidence_refs=[
            {"kind": "url", "ref": "https://example.org/rates?a=1&b=2"},
            {"kind": "url", "ref": "javascript:alert(1)"},
            {"kind": "document", "ref": '<script>alert("x")</script>'},
            {"kind": "url", "ref": "http://example.com/report"},
        ]
    )
    page = page_of(steward_client, claim)
    assert '<a href="https://example.org/rates?a=1&amp;b=2" rel="noopener noreferrer nofollow"' in page
    assert '<a href="http://example.com/report"' in page
    assert 'href="javascript:' not in page and "<code>javascript:alert(1)</code>" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_the_page_shows_author_provenance_and_history(steward_client, make_claim, foreign_steward, steward):
    claim = make_claim(source_label="rates-bot run 42")
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="Matches <the> source")
    admission_decide(claim=claim, steward=steward, decision="challenge", reason="New figures out")
    page = page_of(steward_client, claim)
    assert "person mona" in page and "rates-bot run 42" in page and "acme" in page
    assert "Matches &lt;the&gt; source" in page and "New figures out" in page
    assert page.index("Matches &lt;the&gt; source") < page.index("New figures out")
    assert "fern" in page and "stella" in page
    assert "never counts" in page


def test_every_field_is_read_only(steward_client, claim):
    page = page_of(steward_client, claim)
    for name in ("body", "slug", "entity", "transparency", "as_of", "evidence_refs"):
        assert f'name="{name}"' not in page
    response = steward_client.post(f"/admin/admissions/systemclaim/{claim.pk}/change/", {"body": "Rewritten"})
    assert response.status_code == 403
    claim.refresh_from_db()
    assert claim.body != "Rewritten"
    assert steward_client.get(f"/admin/admissions/systemclaim/{claim.pk}/delete/").status_code == 403
    assert steward_client.get("/admin/admissions/systemclaim/add/").status_code == 403


def test_the_supersede_chain_links_the_claim_to_its_tombstone(steward_client, claim, foreign_steward, steward):
    admission_decide(claim=claim, steward=foreign_steward, decision="admit", reason="ok")
    stance = stance_create(id="uk-rates", title="UK rates", body="Body", reviewed_by=steward)
    tombstone, _ = claim_promote(claim=claim, steward=steward, stance=stance, reason="KB")
    page = page_of(steward_client, claim)
    assert f"/admin/admissions/systemclaim/{tombstone.pk}/change/" in page
    assert "pointer to the stance uk-rates" in page
    tomb_page = page_of(steward_client, tombstone)
    assert f"/admin/admissions/systemclaim/{claim.pk}/change/" in tomb_page
    # A tombstone offers no decision at all.
    assert "/decide/" not in tomb_page and "/promote/" not in tomb_page


@pytest.mark.parametrize(
    ("history", "offered"),
    [
        ([], {"admit", "reject", "challenge"}),
        (["admit"], {"challenge", "revoke", "promote"}),
        (["reject"], {"challenge"}),
    ],
)
def test_the_page_offers_the_decisions_the_status_allows(steward_client, claim, foreign_steward, history, offered):
    for decision in history:
        admission_decide(claim=claim, steward=foreign_steward, decision=decision, reason="earlier")
    page = page_of(steward_client, claim)
    shown = {d for d in ("admit", "reject", "challenge", "revoke") if f'class="decide-{d}"' in page}
    if 'class="promote-link"' in page:
        shown.add("promote")
    assert shown == offered


def test_each_decision_on_the_claim_page_has_an_access_key(steward_client, claim):
    page = page_of(steward_client, claim)
    for key, decision in (("a", "admit"), ("r", "reject"), ("c", "challenge")):
        assert f'accesskey="{key}"\n              class="decide-{decision}"' in page
    assert 'name="reason" rows="2" required' in page


def test_the_author_is_offered_no_decision_on_their_own_claim(steward_client, make_claim, steward):
    own = make_claim(user=steward)
    page = page_of(steward_client, own)
    assert not any(f'class="decide-{d}"' in page for d in ("admit", "reject", "challenge", "revoke"))
    assert 'class="promote-link"' not in page and 'id="decide-form"' not in page
    # The page says why, where the buttons would be.
    assert '<p class="decide-blocked" role="status">You wrote this claim; another steward must decide it.</p>' in page
