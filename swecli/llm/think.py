"""Move `<think>...</think>` (and `<thought>...</thought>`) out of streamed content into reasoning.

Open models served through OpenAI-compatible servers often write their reasoning inline in the
content. The splitter sees the content one delta at a time, so a tag can arrive cut anywhere
(`<th` + `ink>`): text that could still be the start of a tag is held back until the next delta
decides, and everything else is passed on at once so the answer keeps streaming.

An opening tag counts only at the start of the content or of a line (after optional spaces), where
models put it; a `<think>` written in the middle of a sentence or inside inline code is part of the
answer. Whitespace before the first reasoning block and right after a closing tag is dropped: it
only separated the reasoning from the answer.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["text", "reasoning"]
Piece = tuple[Kind, str]

_TAGS = {"<think>": "</think>", "<thought>": "</thought>"}


class ThinkSplitter:
    def __init__(self) -> None:
        self._buffer = ""
        self._close_tag = ""  # non-empty while inside a reasoning block
        self._line_blank = True  # only spaces since the last newline (or the start)
        self._held_space = ""  # leading whitespace, kept until we know whether a tag follows
        self._seen_text = False
        self._seen_reasoning = False
        self._strip_next = False  # right after a closing tag

    def feed(self, text: str) -> list[Piece]:
        self._buffer += text
        out: list[Piece] = []
        while self._buffer:
            progressed = self._step_reasoning(out) if self._close_tag else self._step_text(out)
            if not progressed:
                break
        return out

    @property
    def saw_block(self) -> bool:
        """A reasoning block was opened in the content."""
        return self._seen_reasoning or bool(self._close_tag)

    def flush(self) -> list[Piece]:
        """The stream ended: whatever is held back is what it looked like (an unclosed block stays reasoning)."""
        out: list[Piece] = []
        rest, self._buffer = self._buffer, ""
        if self._close_tag:
            self._emit_reasoning(out, rest)
        else:
            self._emit_text(out, rest)
            if self._held_space:  # the content was nothing but whitespace: it is what it is
                out.append(("text", self._held_space))
                self._held_space = ""
        return out

    # -- one step: returns False when the rest must wait for more input ----------------------------
    def _step_reasoning(self, out: list[Piece]) -> bool:
        end = self._buffer.find(self._close_tag)
        if end >= 0:
            self._emit_reasoning(out, self._buffer[:end])
            self._buffer = self._buffer[end + len(self._close_tag):]
            self._close_tag = ""
            self._strip_next, self._line_blank = True, True
            return True
        keep = _partial_suffix(self._buffer, (self._close_tag,))
        self._emit_reasoning(out, self._buffer[: len(self._buffer) - keep])
        self._buffer = self._buffer[len(self._buffer) - keep:]
        return False

    def _step_text(self, out: list[Piece]) -> bool:
        start = 0
        while (lt := self._buffer.find("<", start)) >= 0:
            if self._blank_before(lt):
                rest = self._buffer[lt:]
                opener = next((tag for tag in _TAGS if rest.startswith(tag)), None)
                if opener is not None:
                    self._emit_text(out, self._buffer[:lt])
                    self._held_space = ""
                    if self._seen_reasoning:  # keep separate blocks apart
                        out.append(("reasoning", "\n"))
                    self._buffer = rest[len(opener):]
                    self._close_tag = _TAGS[opener]
                    return True
                if any(tag.startswith(rest) for tag in _TAGS):
                    self._emit_text(out, self._buffer[:lt])
                    self._buffer = rest
                    return False  # could still become a tag
            start = lt + 1
        self._emit_text(out, self._buffer)
        self._buffer = ""
        return False

    def _blank_before(self, index: int) -> bool:
        before = self._buffer[:index]
        newline = before.rfind("\n")
        if newline >= 0:
            return not before[newline + 1:].strip(" \t\r")
        return self._line_blank and not before.strip(" \t\r")

    # -- emitting --------------------------------------------------------------------------------
    def _emit_reasoning(self, out: list[Piece], text: str) -> None:
        if text:
            self._seen_reasoning = True
            out.append(("reasoning", text))

    def _emit_text(self, out: list[Piece], text: str) -> None:
        if not text:
            return
        newline = text.rfind("\n")
        tail = text[newline + 1:] if newline >= 0 else text
        self._line_blank = (newline >= 0 or self._line_blank) and not tail.strip(" \t\r")
        if self._strip_next:  # the whitespace after a closing tag only separated reasoning from answer
            text = text.lstrip()
            if not text:
                return
            self._strip_next = False
        if not self._seen_text:
            if not text.strip():  # leading whitespace: kept back until we know whether a block follows
                self._held_space += text
                return
            text, self._held_space = self._held_space + text, ""
        self._seen_text = True
        out.append(("text", text))


def split_bare_close(text: str) -> tuple[str, str] | None:
    """(reasoning, answer) for content that closes a block it never opened, else None.

    Some chat templates put `<think>` into the prompt, so the model's output starts inside the block
    and only `</think>` shows up. Streaming cannot know that until the tag arrives (the text before it
    was already shown as answer), but the stored message can still be right.
    """
    for close in _TAGS.values():
        end = text.find(close)
        if end >= 0 and "<" + close[2:] not in text[:end]:
            return text[:end].strip(), text[end + len(close):].lstrip()
    return None


def _partial_suffix(text: str, tags: tuple[str, ...]) -> int:
    """Length of the longest end of `text` that is a proper beginning of one of `tags`."""
    best = 0
    for tag in tags:
        for size in range(min(len(tag) - 1, len(text)), 0, -1):
            if text.endswith(tag[:size]):
                best = max(best, size)
                break
    return best
