"""Modal dialogs: permission (structured patch, per-hunk), revert confirmation, settings."""
