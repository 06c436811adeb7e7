"""The changes panel: the change log built from events, its rendering and actions (open, revert)."""
