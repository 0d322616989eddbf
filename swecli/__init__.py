"""swecli: a terminal coding agent that manages its context window."""

__version__ = "0.1.0"
