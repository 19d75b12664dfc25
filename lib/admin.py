"""What the Django admin may do to rows the services own: look, and nothing else."""

from __future__ import annotations


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
