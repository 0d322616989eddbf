"""Sub-agents for context isolation: the parent hands a self-contained job to a child agent with a
fresh context and keeps only its report.

- `definitions`: the built-in `explore` agent and user-defined agents (`.swecli/agents/NAME.md`)
- `runner`: running one child (linked cancel, budgets, wrap-up, bounded report)
- `task`: the `task` tool the parent model calls

The child itself is built by `swecli.assembly` (this package never imports the loop).
"""
