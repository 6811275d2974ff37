"""The client's version: xclaw's own (`xclaw --version`), which a test checks against the Swift command table."""

__version__ = "0.1.0"
