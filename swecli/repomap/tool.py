"""The `repo_map` tool: the model asks for the map of a directory, or for a file's neighbours."""

from __future__ import annotations

from pydantic import BaseModel, Field

from swecli.tools.base import Tool, ToolContext, ToolError, ToolResult
from swecli.tools.paths import display_path, resolve_in_root

TOOL_TOKENS = 2_000
"""Budget of one answer: enough for 30-60 files with their definitions."""
DESCRIPTION = ("Map of a directory (files ranked by centrality, with their definitions as name:line) or of a "
               "file (what it defines, imports, and is imported by).")


class RepoMapArgs(BaseModel):
    path: str = Field(".", description="Directory or file, relative to the project root.")


def repo_map(args: RepoMapArgs, ctx: ToolContext) -> ToolResult:
    from swecli.repomap.repomap import background
    from swecli.repomap.views import UnknownFile, deps_text, directory_map, find_file

    target = resolve_in_root(ctx.root, args.path)
    shown = display_path(ctx.root, target)
    if not target.exists():
        raise ToolError(f"Path not found: {shown}. Pass a directory or a file of the project (or `.`).")
    pending = background(ctx.root)
    rmap = pending.wait()
    if rmap is None:
        raise ToolError(f"The repository map could not be built ({pending.error}); use list_files and grep.")
    if target.is_dir():
        text = directory_map(rmap, shown, TOOL_TOKENS)
        return ToolResult(text, summary=f"map of {shown}/" if shown != "." else "map of the project")
    try:
        rel = find_file(rmap, shown)
    except UnknownFile as exc:
        raise ToolError(str(exc)) from None
    return ToolResult(deps_text(rmap, rel), summary=f"neighbours of {rel}")


REPO_MAP = Tool(name="repo_map", description=DESCRIPTION, args=RepoMapArgs, fn=repo_map)
