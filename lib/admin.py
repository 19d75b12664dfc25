"""What the Django admin may do to rows the services own (look, and nothing else), and its list filters."""

from __future__ import annotations

import abc

from django.contrib import admin
from django.db.models import Count, Q


class ViewOnlyAdmin:
    """Mixed in before `admin.ModelAdmin` (or an inline): no add, change or delete, by page or by action.

    Rows whose writes must go through a service (which checks the rules and
    writes an audit row) or that are receipts the database keeps append-only.
    Refusing delete also drops the `delete_selected` action, which asks for it.
    """

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ConditionFilter(admin.SimpleListFilter, abc.ABC):
    """A filter whose choices are conditions on the row, so its facet counts are
    `COUNT(*) FILTER (WHERE condition)` in the one aggregate query, rather than
    Django's default of one `id IN (subquery)` per choice."""

    @abc.abstractmethod
    def condition(self, value: str) -> Q | None:
        """The condition a row meets for the choice `value`, or None for no filter."""

    def queryset(self, request, queryset):
        condition = self.condition(self.value()) if self.value() is not None else None
        return queryset.filter(condition) if condition is not None else queryset

    def get_facet_counts(self, pk_attname, filtered_qs):
        return {
            f"{index}__c": Count(pk_attname, filter=self.condition(str(value)))
            for index, (value, _) in enumerate(self.lookup_choices)
        }


class DeclaredConditionFilter(ConditionFilter):
    """A `ConditionFilter` declared as its choices: each value's label and the condition a row meets."""

    @abc.abstractmethod
    def declared(self) -> dict[str, tuple[str, Q]]:
        """value → (label, condition), in the order the admin lists them."""

    def lookups(self, request, model_admin):
        return [(value, label) for value, (label, _) in self.declared().items()]

    def condition(self, value: str) -> Q | None:
        found = self.declared().get(value)
        return found[1] if found else None
