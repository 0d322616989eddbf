"""What swecli knows about providers and models: tables and pure functions, no I/O."""
