"""The model's own task list: a `todo` tool that replaces the whole list on every call.

Like Claude Code's TodoWrite: the model sends the complete list each time (so it can never drift
from what it believes), the tool answers with the rendered list, and `TodoState` keeps it for the
recitation block in the dynamic tail (`swecli.context.recitation`).
"""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from swecli.records import datarecord
from swecli.tools.base import Tool, ToolContext, ToolError, ToolResult
from swecli.tools.facts import ToolFacts, declare

TodoStatus = Literal["pending", "in_progress", "done"]

MAX_ITEMS = 50
MAX_CONTENT_CHARS = 300

_MARKS: dict[str, str] = {"done": "[x]", "in_progress": "[>]", "pending": "[ ]"}

TODO_DESCRIPTION = (
    "Write the task list for the current request: send the COMPLETE list every time (it replaces the "
    "previous one). Use it for work with 3 or more steps: add the steps, mark one item in_progress while "
    "you work on it, mark items done as soon as they are finished, and add items you discover. "
    "Statuses: pending, in_progress, done. Returns the list as it now stands."
)


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = Field(description="What to do, as one short imperative sentence.")
    status: TodoStatus = Field("pending", description="pending, in_progress or done.")

    @field_validator("content")
    @classmethod
    def _clean(cls, value: str) -> str:
        text = " ".join(value.split())
        if not text:
            raise ValueError("must not be empty")
        if len(text) > MAX_CONTENT_CHARS:
            raise ValueError(f"must be at most {MAX_CONTENT_CHARS} characters; split the item or shorten it")
        return text


class TodoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[TodoItem] = Field(description="The complete task list, in order. An empty list clears it.")


@datarecord
class TodoState:
    """The current list; `version` counts writes so the recitation can tell the list changed."""

    items: list[TodoItem] = field(default_factory=list)
    version: int = 0

    def replace(self, items: list[TodoItem]) -> None:
        problem = _problem(items)
        if problem:
            raise ToolError(problem)
        self.items = list(items)
        self.version += 1

    def clear(self) -> None:
        self.items = []
        self.version += 1

    @property
    def done(self) -> int:
        return sum(1 for item in self.items if item.status == "done")

    @property
    def total(self) -> int:
        return len(self.items)

    def next_step(self) -> TodoItem | None:
        """The item being worked on, else the first one not started."""
        for wanted in ("in_progress", "pending"):
            for item in self.items:
                if item.status == wanted:
                    return item
        return None

    def open_items(self) -> list[TodoItem]:
        return [item for item in self.items if item.status != "done"]

    def render(self) -> str:
        if not self.items:
            return "Todo list is empty."
        lines = [f"Todo ({self.done}/{self.total} done):"]
        lines.extend(f"{_MARKS[item.status]} {item.content}" for item in self.items)
        return "\n".join(lines)


def _problem(items: list[TodoItem]) -> str:
    if len(items) > MAX_ITEMS:
        return f"The todo list has {len(items)} items; keep it to at most {MAX_ITEMS} by merging small steps."
    seen: set[str] = set()
    for item in items:
        key = item.content.casefold()
        if key in seen:
            return f"The todo list repeats the item {item.content!r}; send each item once."
        seen.add(key)
    return ""


def todo_tool(state: TodoState) -> Tool[TodoArgs]:
    """The `todo` tool bound to `state`. Not mutating: it touches no file, so plan mode allows it."""

    def write(args: TodoArgs, ctx: ToolContext) -> ToolResult:
        state.replace(args.items)
        in_progress = sum(1 for item in state.items if item.status == "in_progress")
        text = state.render()
        if in_progress > 1:
            text += f"\nNote: {in_progress} items are in_progress; keep one in progress at a time."
        return ToolResult(
            text,
            summary=f"{state.done}/{state.total} done" if state.items else "cleared",
            meta={"done": state.done, "total": state.total, "version": state.version},
        )

    return Tool(name="todo", description=TODO_DESCRIPTION, args=TodoArgs, fn=write, facts=TODO_FACTS)


TODO_FACTS = ToolFacts(kind="memory", fold_after=None)
"""The list is small and the current one matters: never folded (the dynamic tail recites it too)."""
declare("todo", TODO_FACTS)
