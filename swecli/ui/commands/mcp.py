"""MCP commands: `/mcp` lists the servers and their tools; `/mcp enable|disable NAME` starts or stops a
server for this session only (the config file is `swecli mcp add/remove`'s business)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from swecli.ui.commands.registry import Family

if TYPE_CHECKING:
    from swecli.mcp.catalog import McpCatalog
    from swecli.ui.repl import Repl

commands = Family()
ACTIONS = ("enable", "disable")
USAGE = "/mcp [enable|disable NAME]"


def complete_mcp(repl: Repl, typed: str) -> list[str]:
    action, space, name = typed.partition(" ")
    catalog = repl.session.mcp
    if not space or catalog is None:
        return [a for a in ACTIONS if a.startswith(action)]
    return [f"{action} {s.name}" for s in catalog.manager.states() if s.name.startswith(name)]


@commands.command("mcp", "Show the MCP servers and their tools; enable or disable one for this session",
                  usage=USAGE, complete=complete_mcp)
def mcp(repl: Repl, args: str) -> None:
    catalog = repl.session.mcp
    if catalog is None:
        repl.print(Text("No MCP servers configured. Add one with: swecli mcp add NAME -- COMMAND ARGS...",
                        style="dim"))
        return
    action, _, name = args.partition(" ")
    if not action:
        show(repl, catalog)
    elif action in ACTIONS and name.strip():
        switch(repl, catalog, action, name.strip())
    else:
        repl.print(Text(f"Usage: {USAGE}", style="red"))


def show(repl: Repl, catalog: McpCatalog) -> None:
    from swecli.mcp.configfile import server_scopes
    from swecli.mcp.report import listing

    repl.agent.sync_tools()  # servers that became ready since the last request
    for text, style in listing(catalog, server_scopes(repl.session.root)):
        repl.print(Text(text, style=style))
    repl.refresh_meter()


def switch(repl: Repl, catalog: McpCatalog, action: str, name: str) -> None:
    manager = catalog.manager
    state = manager.state(name)
    if state is None:
        known = ", ".join(s.name for s in manager.states())
        repl.print(Text(f"No MCP server named {name!r}; configured: {known}.", style="red"))
        return
    if action == "enable":
        if state.status in ("ready", "starting"):
            repl.print(Text(f"{name} is already {state.status}.", style="dim"))
            return
        manager.start_server(name)
        repl.print(Text(f"Starting {name} for this session; its tools join the tools list when it is ready.",
                        style="green"))
        return
    if state.status not in ("ready", "starting"):
        repl.print(Text(f"{name} is not running ({state.status}).", style="dim"))
        return
    manager.stop_server(name)
    repl.agent.sync_tools()
    repl.refresh_meter()
    repl.print(Text(f"Stopped {name} for this session; its tools left the tools list.", style="green"))
