"""Control characters made visible: what a tool read or ran must not drive the user's terminal.

A file, a command's output or an MCP server's answer can hold escape sequences: `cat` of a binary file,
or a repository file written to clear the screen, retitle the window, move the cursor or hide text.
Printed raw they act on the terminal; sent raw to the model they are noise it may repeat. `visible()`
keeps newlines and tabs and writes every other control character as its escape (`\\x1b[2J`, `\\x07`,
`\\r`, `\\x9b`), so the sequence is seen, not obeyed; a `\\r\\n` line end is a newline. A command's
output first loses its colour and style codes (`without_colours`: SGR, `ESC [ ... m`, the one kind that
only paints text), so forced-colour test output stays readable; a file keeps them, escaped, since an edit
must be able to quote them (`invisible` turns the escapes back).
"""

from __future__ import annotations

import re

from swecli.lazy import regex

_SGR = regex(r"\x1b\[[0-9;:]*m")
_CONTROL = regex(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return "\\r" if char == "\r" else f"\\x{ord(char):02x}"


def visible(text: str) -> str:
    """`text` safe to print and to send (see the module docstring)."""
    if text.isprintable():
        return text  # the common case, checked in C
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


def without_colours(text: str) -> str:
    """A command's output without its colour and style codes."""
    return _SGR.sub("", text) if "\x1b[" in text else text


_ESCAPED = regex(r"\\x([0-9a-f]{2})|\\r")


def invisible(text: str) -> str:
    """`visible`'s escapes of control characters turned back into the characters: the model quotes a line
    of a file that holds a raw form feed or ESC as it was shown (`\\x0c`), and an edit must still match."""

    def raw(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return "\r"
        char = chr(int(match.group(1), 16))
        return char if _CONTROL.fullmatch(char) else match.group()

    return _ESCAPED.sub(raw, text)
