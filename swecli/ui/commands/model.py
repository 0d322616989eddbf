"""Model and mode commands: `/model [NAME]`, `/mode [default|auto|plan]`, `/thinking [on|off|...]`."""

from __future__ import annotations

import difflib

from rich.text import Text

from swecli.permissions import MODES
from swecli.ui.commands.registry import CommandContext, Family
from swecli.ui.meter import format_tokens

commands = Family()


@commands.command("model", "Show the model, or switch to another one", usage="/model [NAME]")
def model(ctx: CommandContext, args: str) -> None:
    if args:
        ctx.switch_model(args)
        return
    settings = ctx.settings
    line = Text("Model: ")
    line.append(settings.model or "(none)", style="bold")
    line.append(f" · provider {settings.provider or '(auto)'}")
    if settings.base_url:
        line.append(f" · {settings.base_url}")
    line.append(f" · context window {format_tokens(settings.context_window)}")
    ctx.print(line)
    ctx.print(Text("Switch with /model NAME.", style="dim"))


def complete_mode(ctx: CommandContext, typed: str) -> list[str]:
    return [m for m in MODES if m.startswith(typed)]


@commands.command("mode", "Show or switch the mode: default asks before changes, auto does not, plan is read-only",
                  usage="/mode [default|auto|plan]", complete=complete_mode)
def mode(ctx: CommandContext, args: str) -> None:
    if not args:
        ctx.print(Text(f"Mode: {ctx.mode} (choose with /mode {'|'.join(MODES)}; Shift-Tab cycles)"))
        return
    if args not in MODES:
        hint = difflib.get_close_matches(args, MODES, n=1)
        ctx.print(Text(f"Unknown mode {args!r}; use one of: {', '.join(MODES)}."
                        + (f" Did you mean {hint[0]}?" if hint else ""), style="red"))
        return
    ctx.set_mode(args)


THINKING_WORDS = ("on", "off", "low", "medium", "high")


def complete_thinking(ctx: CommandContext, typed: str) -> list[str]:
    return [w for w in THINKING_WORDS if w.startswith(typed)]


@commands.command("thinking", "Show or set extended thinking (Anthropic budget) / reasoning effort (OpenAI)",
                  usage="/thinking [on|off|low|medium|high|BUDGET]", complete=complete_thinking)
def thinking(ctx: CommandContext, args: str) -> None:
    from swecli.models.presets import PRESETS
    from swecli.models.thinking import Thinking

    preset = PRESETS.get(ctx.settings.provider)
    wire, model = (preset.wire if preset else ""), ctx.settings.model
    if args:
        try:
            ctx.session.agent.thinking = Thinking.parse(args)
        except ValueError as exc:
            ctx.print(Text(f"{exc}.", style="red"))
            return
    ctx.print(Text(f"Thinking: {ctx.session.agent.thinking.describe(wire, model)}"))
    if not args:
        ctx.print(Text("Set it with /thinking on|off|low|medium|high|BUDGET (tokens, at least 1024).", style="dim"))
