"""MCP commands: `/mcp` lists the servers and their tools; `/mcp enable|disable NAME` starts or stops a
server for this session only (the config file is `swecli mcp add/remove`'s business)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from swecli.ui.commands.registry import CommandContext, Family

if TYPE_CHECKING:
    from swecli.mcp.catalog import McpCatalog

commands = Family()
ACTIONS = ("enable", "disable")
USAGE = "/mcp [enable|disable NAME]"


def complete_mcp(ctx: CommandContext, typed: str) -> list[str]:
    action, space, name = typed.partition(" ")
    catalog = ctx.session.mcp
    if not space or catalog is None:
        return [a for a in ACTIONS if a.startswith(action)]
    return [f"{action} {s.name}" for s in catalog.manager.states() if s.name.startswith(name)]


@commands.command("mcp", "Show the MCP servers and their tools; enable or disable one for this session",
                  usage=USAGE, complete=complete_mcp)
def mcp(ctx: CommandContext, args: str) -> None:
    catalog = ctx.session.mcp
    if catalog is None:
        ctx.print(Text("No MCP servers configured. Add one with: swecli mcp add NAME -- COMMAND ARGS...",
                        style="dim"))
        return
    action, _, name = args.partition(" ")
    if not action:
        show(ctx, catalog)
    elif action in ACTIONS and name.strip():
        switch(ctx, catalog, action, name.strip())
    else:
        ctx.print(Text(f"Usage: {USAGE}", style="red"))


def show(ctx: CommandContext, catalog: McpCatalog) -> None:
    from swecli.mcp.configfile import server_scopes
    from swecli.mcp.report import listing

    ctx.session.agent.sync_tools()  # servers that became ready since the last request
    for text, style in listing(catalog, server_scopes(ctx.session.root)):
        ctx.print(Text(text, style=style))
    ctx.refresh_meter()


def switch(ctx: CommandContext, catalog: McpCatalog, action: str, name: str) -> None:
    manager = catalog.manager
    state = manager.state(name)
    if state is None:
        known = ", ".join(s.name for s in manager.states())
        ctx.print(Text(f"No MCP server named {name!r}; configured: {known}.", style="red"))
        return
    if action == "enable":
        if state.status in ("ready", "starting"):
            ctx.print(Text(f"{name} is already {state.status}.", style="dim"))
            return
        manager.start_server(name)
        ctx.print(Text(f"Starting {name} for this session; its tools join the tools list when it is ready.",
                        style="green"))
        return
    if state.status not in ("ready", "starting"):
        ctx.print(Text(f"{name} is not running ({state.status}).", style="dim"))
        return
    manager.stop_server(name)
    ctx.session.agent.sync_tools()
    ctx.refresh_meter()
    ctx.print(Text(f"Stopped {name} for this session; its tools left the tools list.", style="green"))
