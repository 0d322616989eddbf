"""Context commands: `/context` (what fills the window) and `/compact [focus]`.

They show and act on the context engine's public surface (`ContextManager.state`, `.compact`,
`.compactions`, `.mechanisms`); the engine itself knows nothing of the REPL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text

from swecli.context.budget import ContextState
from swecli.ui.commands.registry import CommandContext, Family
from swecli.ui.meter import format_tokens

if TYPE_CHECKING:
    from swecli.context.manager import ContextManager

BAR_WIDTH = 60
_STYLES = {"system": "cyan", "tools": "blue", "memory": "magenta", "history": "green", "current turn": "yellow",
           "free": "grey50", "reserved for reply": "grey35"}
_GLYPHS = {"free": "░", "reserved for reply": "▒"}


commands = Family()


@commands.command("context", "Show what fills the context window: system, tools, memory, history, current turn")
def context(ctx: CommandContext, args: str) -> None:
    ctx.session.agent.sync_tools()  # MCP servers that became ready since the last request
    manager = ctx.session.agent.context
    ctx.print(context_report(manager.state(ctx.session.agent.history), manager))
    if ctx.session.mcp is not None:
        ctx.print(Text(ctx.session.mcp.summary(), style="dim"))


@commands.command("compact", "Compact the conversation now; the focus text steers what the summary keeps",
                  usage="/compact [focus instructions]")
def compact(ctx: CommandContext, args: str) -> None:
    agent = ctx.session.agent
    if not agent.history:
        ctx.print(Text("Nothing to compact: the conversation is empty.", style="dim"))
        return
    ctx.print(Text("Compacting the conversation…" + (f" (focus: {args})" if args else ""), style="dim"))
    # The CompactionDone line (or the notice saying why nothing changed) arrives through the event bus.
    agent.replace_history(agent.context.compact(agent.history, ctx.session.provider, trigger="manual", focus=args),
                          "compaction")
    ctx.refresh_meter()


def context_report(state: ContextState, context: ContextManager | None = None) -> Group:
    """The breakdown as a table, a bar, and how the numbers were obtained."""
    window = state.budget.window or 1
    from rich.table import Table  # when /context is asked for, not when the REPL builds its commands

    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
    table.add_column("component")
    table.add_column("tokens", justify="right")
    table.add_column("% of window", justify="right")
    for label, tokens in state.rows():
        table.add_row(Text(label, style=_STYLES.get(label, "")), f"{tokens:,}", f"{100 * tokens / window:.1f}%")
    head = Text(f"Context: {format_tokens(state.total)} of {format_tokens(state.budget.window)} tokens "
                f"({state.percent:.0f}%) · {state.messages} messages", style="bold")
    return Group(head, context_bar(state), table, _footer(state, context))


def context_bar(state: ContextState, width: int = BAR_WIDTH) -> Text:
    window = state.budget.window or 1
    bar = Text()
    used = 0
    for label, tokens in state.rows():
        cells = round(width * tokens / window)
        cells = max(0, min(cells, width - used))
        bar.append(_GLYPHS.get(label, "█") * cells, style=_STYLES.get(label, ""))
        used += cells
    marker = min(width - 1, round(width * state.budget.limit / window))
    bar.append("\n" + " " * marker + "▲ compaction at " + format_tokens(state.budget.limit), style="dim")
    return bar


def _levels(state: ContextState, context: ContextManager) -> str:
    """Where the background summary starts, compaction fires and the loop would wait; what runs now."""
    budget = state.budget
    start = context.summary_start(state)
    ahead = f"background summary from {format_tokens(start)}" if start is not None else "no background summary"
    doing = context.background_status()
    return (f"{ahead} · compaction at {format_tokens(budget.limit)} · hard limit {format_tokens(budget.hard_limit)} "
            f"(replies get max_tokens {format_tokens(budget.reserve)})" + (f" · now: {doing}" if doing else ""))


def _footer(state: ContextState, context: ContextManager | None) -> Text:
    lines = [f"window {format_tokens(state.budget.window)}: {context.window_source}"] if context is not None else []
    if state.calibrated:
        lines.append(f"calibrated to the provider: ×{state.ratio:.3f} (local {state.encoding} count "
                     f"{state.raw_total:,})")
    else:
        lines.append(f"local {state.encoding} count; calibrates after the provider's first usage report")
    if not state.exact:
        lines.append("no tokenizer could be loaded: counts are estimates from characters")
    if context is not None:
        cfg = context.config
        auto = "auto-compaction on" if cfg.auto_compact else "auto-compaction off"
        lines.append(f"{auto} · strategy {cfg.strategy} · keeps the last {format_tokens(context.keep_recent_tokens)} "
                     f"tokens verbatim · {len(context.compactions)} compaction(s) this session")
        lines.append(_levels(state, context))
        lines.extend(context.mechanisms.summary_lines())
    return Text("\n".join(lines), style="dim")

