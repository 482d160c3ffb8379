"""Segue: pick an AI coding session up where it stopped."""

__version__ = "0.1.0"
