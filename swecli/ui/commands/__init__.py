"""Slash commands, one module per family, all on one registry.

- `registry`: `Command`, `CommandRegistry` (dispatch, suggestions), `Family` (the decorator a family uses),
  `CommandContext` (what a command may read and do)
- `session`: /help /clear /tokens /resume /exit
- `model`: /model /mode
- `context`: /context /compact
- `memory`: /init /notes /playbook
- `project`: /repomap
- `skills`: /skills, and one /skill-name per skill (registered by the REPL once the session has its catalog)
- `mcp`: /mcp

A new command is a decorated function in the family it belongs to (a new family module is added to
`default_registry`).
"""

from __future__ import annotations

from swecli.ui.commands.registry import Command, CommandContext, CommandRegistry, Family, is_command

__all__ = ["Command", "CommandContext", "CommandRegistry", "Family", "default_registry", "is_command"]


def default_registry() -> CommandRegistry:
    """Every family's commands on one registry (the REPL's)."""
    from swecli.ui.commands import context, mcp, memory, model, project, session, skills

    return CommandRegistry([*session.commands, *model.commands, *context.commands, *memory.commands,
                            *project.commands, *skills.commands, *mcp.commands])
