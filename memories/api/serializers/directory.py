"""The directory: people and places as records."""

from __future__ import annotations

from rest_framework import serializers

from accounts.people import DIRECTORY_USERNAME_PREFIX
from memories.api.serializers.base import OutputSerializer, StrictSerializer, derived, people_field, place_kind_field
from memories.places import member_labels


class PersonInputSerializer(StrictSerializer):
    display_name = serializers.CharField(
        max_length=200,
        allow_blank=True,
        required=False,
        default="",
        help_text="How the person is named in rendered blocks and on pages, at most 200 characters.",
    )


def signs_in_as(user, context: dict) -> str | None:
    # A person the directory made has a placeholder username until they are invited.
    return None if user.username.startswith(DIRECTORY_USERNAME_PREFIX) else user.username


class PersonOutputSerializer(OutputSerializer):
    # A person of the directory, from their `Membership`.
    id = serializers.UUIDField(
        source="user.pk", help_text="The person's one stable id: what scopes, subjects and audits store."
    )
    handle = serializers.CharField(allow_null=True, help_text="The integration's id for them, if it made them.")
    username = derived(
        serializers.CharField,
        signs_in_as,
        source="user",
        allow_null=True,
        help_text="What they sign in with; null until invited.",
    )
    display_name = serializers.CharField()
    can_sign_in = derived(
        serializers.BooleanField, lambda user, context: user.is_active and user.has_usable_password(), source="user"
    )
    active = serializers.BooleanField(source="user.is_active")
    created_at = serializers.DateTimeField()


class PlaceInputSerializer(StrictSerializer):
    kind = place_kind_field("dm (one person), private (its members only) or public (open to the organisation).")
    people = people_field("Handles or usernames of everyone in the place: its whole membership (exactly one for a DM).")


class PlaceOutputSerializer(OutputSerializer):
    # A place's record (`memories.places.PlaceRecord`).
    channel = serializers.CharField(source="channel.external_id")
    kind = serializers.CharField(source="channel.kind")
    people = derived(
        serializers.ListField,
        lambda record, context: member_labels(record),
        child=serializers.CharField(),
        help_text="Members, by handle or username.",
    )
    created_at = serializers.DateTimeField(source="channel.created_at")
    updated_at = serializers.DateTimeField(source="channel.updated_at")
