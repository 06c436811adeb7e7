"""Adversarial tests of the approval boundary (issue 12): a hostile scripted model against the real CLI."""
