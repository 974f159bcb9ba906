"""Composition and validation of the config tree (conf/)."""
