"""Filters for listing memories: by the row's fields, by time ranges, by state, and `q` for words."""

from __future__ import annotations

from datetime import UTC

import django_filters
from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import ValidationError
from django.db.models import CharField, OuterRef, Q, Subquery
from django.db.models.functions import Cast
from django.utils import timezone
from django_filters.fields import IsoDateTimeField

from memories.db.predicates import current_q
from memories.models import Author, Bucket, Channel, ChannelMember, Memory, Scope, SubjectType, Tier


class UtcIsoDateTimeField(IsoDateTimeField):
    """ISO 8601 allows UTC offsets up to ±23:59 and PostgreSQL only ±15:59: compare in UTC instead."""

    def to_python(self, value):
        value = super().to_python(value)
        if value is None:
            return None
        try:
            return value.astimezone(UTC)
        except OverflowError:
            raise ValidationError("This time is outside the range a timestamp can hold.") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


BOOLEANS = ("true", "false", "1", "0")
STATES = (("live", "live"), ("expired", "expired"), ("superseded", "superseded"), ("erased", "erased"))


class MemoryFilter(django_filters.FilterSet):
    bucket = django_filters.ChoiceFilter(choices=[c for c in Bucket.choices if c[0] != Bucket.SYSTEM])
    scope = django_filters.ChoiceFilter(choices=Scope.choices)
    subject_type = django_filters.ChoiceFilter(choices=SubjectType.choices)
    subject_id = django_filters.CharFilter(max_length=200)
    author = django_filters.ChoiceFilter(choices=Author.choices)
    tier = django_filters.ChoiceFilter(choices=Tier.choices)
    pinned = django_filters.BooleanFilter()
    created_after = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lt")
    expires_after = UtcIsoDateTimeFilter(field_name="expires_at", lookup_expr="gte")
    expires_before = UtcIsoDateTimeFilter(field_name="expires_at", lookup_expr="lt")
    state = django_filters.ChoiceFilter(choices=STATES, method="filter_state", help_text="Default: every state.")
    q = django_filters.CharFilter(method="filter_words", max_length=500, help_text="Lexical search over the body.")
    source_ref = django_filters.CharFilter(max_length=200, help_text="Only memories with this source reference.")
    source_ref_prefix = django_filters.CharFilter(
        field_name="source_ref",
        lookup_expr="startswith",
        max_length=200,
        help_text="Only memories whose source reference starts with this text (an integration's own references).",
    )
    channel = django_filters.CharFilter(
        method="filter_channel",
        max_length=200,
        help_text="Only memories kept in this place: its channel facts, and for a DM its person's facts.",
    )

    class Meta:
        model = Memory
        fields: list[str] = []

    def is_valid(self) -> bool:
        """An empty choice, time or flag, or an unreadable flag, is refused rather than read as "no filter"."""
        valid = super().is_valid()
        data = self.data or {}
        for name, declared in self.filters.items():
            if name not in data or isinstance(declared, django_filters.CharFilter):
                continue
            value = str(data[name]).strip()
            if not value:
                self.form.add_error(name, "Give a value, or leave the parameter out.")
                valid = False
            elif isinstance(declared, django_filters.BooleanFilter) and value.lower() not in BOOLEANS:
                # Django reads anything else as "unknown", which would silently not filter.
                self.form.add_error(name, "Use true or false.")
                valid = False
        return valid

    def filter_state(self, queryset, name, value):
        now = timezone.now()
        live = current_q()
        if value == "erased":
            return queryset.filter(redacted_at__isnull=False)
        if value == "superseded":
            return queryset.filter(redacted_at__isnull=True, superseded_by__isnull=False)
        if value == "expired":
            return queryset.filter(live, expires_at__lte=now)
        return queryset.filter(live, expires_at__gt=now)

    def filter_channel(self, queryset, name, value):
        # A DM's facts are its person's (scope person, by account id); a channel's are its own.
        dm_people = (
            ChannelMember.objects.filter(
                organisation_id=OuterRef("organisation_id"), channel__external_id=value, channel__kind=Channel.Kind.DM
            )
            .annotate(ref=Cast("user_id", CharField()))
            .values("ref")
        )
        in_dm = Q(scope=Scope.PERSON, scope_ref__in=Subquery(dm_people))
        return queryset.filter(Q(scope=Scope.CHANNEL, scope_ref=value) | in_dm)

    def filter_words(self, queryset, name, value):
        if not value.strip():
            return queryset
        return queryset.filter(search_vector=SearchQuery(value, config="english", search_type="websearch"))
