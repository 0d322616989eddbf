"""What many test files need, written once: settings for the scripted server, an agent over a scripted
model, the texts and the tool results of a request body, whether a process is alive, cyclic garbage and a
watch on the collections it causes."""

from __future__ import annotations

import gc
import io
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TextIO

import pytest

from swecli.agent import Agent
from swecli.config import ContextConfig, MemoryConfig, Settings
from swecli.context.manager import ContextManager, Prompt
from swecli.events import Event
from swecli.messages import SystemBlock
from swecli.permissions import Policy
from swecli.testing.model import ScriptedModel
from swecli.testing.server import ScriptedLLM
from swecli.tools.base import ToolContext, ToolRegistry

QUIET: Mapping[str, bool] = {"offload": False, "decay": False, "recitation": False, "failure_evidence": False,
                             "playbook": False, "just_in_time": False}
"""The per-request mechanisms off: a test of something else sees requests that carry only what it sent."""


def scripted_settings(llm: ScriptedLLM, *, context: Mapping[str, Any] | None = None, **fields: Any) -> Settings:
    """Settings that talk to the scripted server on its wire (Anthropic with a test key, else an OpenAI-compatible
    server), in auto mode, with the mechanisms off (`context` turns some on) and no session notes; `fields`
    override any other setting."""
    wire = {"provider": "anthropic", "api_key": "sk-ant-test-key-0000"} if llm.wire == "anthropic" else \
        {"provider": "openai-compatible"}
    base: dict[str, Any] = {**wire, "base_url": llm.base_url, "model": "scripted-model", "mode": "auto",
                            "context": ContextConfig(**{**QUIET, **(context or {})}),
                            "memory": MemoryConfig(session_notes=False)}
    return Settings(**{**base, **fields})


def loop_agent(model: ScriptedModel, tools: ToolRegistry, root: Path, *, mode: str = "auto",
               on_event: Callable[[Event], None] | None = None, context: ContextManager | None = None,
               max_iterations: int = 20) -> Agent:
    """The real loop over a scripted model, with `tools` and a plain context engine (system prompt `sys`)."""
    context = context or ContextManager(Prompt((SystemBlock(text="sys"),), tools.schemas()))
    return Agent(model, tools, context, ToolContext(root=root), Policy(mode),
                 on_event=on_event or (lambda event: None), max_iterations=max_iterations)


def texts(body: dict[str, Any]) -> list[str]:
    """Every text a request body carries in its messages (tool results included), in order, on either wire."""
    out: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        for block in content or []:
            inner = block.get("content", block.get("text", ""))
            out.append(inner if isinstance(inner, str) else json.dumps(inner))
    return out


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every tool result a request body carries, in order, on either wire (an OpenAI `tool`
    message, or an Anthropic `tool_result` block whose content is a string or text blocks)."""
    out: list[str] = []
    for message in body["messages"]:
        if message["role"] == "tool":
            out.append(message["content"])
        elif isinstance(message.get("content"), list):
            out += [_block_text(block["content"]) for block in message["content"] if block.get("type") == "tool_result"]
    return out


def _block_text(content: str | list[dict[str, Any]]) -> str:
    return content if isinstance(content, str) else "".join(block.get("text", "") for block in content)


def alive(pid: int) -> bool:
    """The process runs (a zombie waiting to be reaped does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def swecli_in_process(argv: list[str], cwd: Path, env: Mapping[str, str],
                      stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`swecli ARGV` run in this process (its stdin /dev/null, or with `stdin` a pipe that text is written
    into, as `echo text | swecli ...`; its stdout and stderr captured; its exit status from `SystemExit`),
    for tests of what `-p` does and says rather than of the process itself: a `swecli` process costs its
    interpreter's start, the imports and the vocabulary, seconds on a loaded machine. The environment and
    working directory are the run's own and restored after. Tests of signals, start-up, what is imported,
    and the process boundary (exit status, stdout and stderr as a shell sees them) keep starting a real
    process."""
    from swecli.cli import run_app

    saved_env, saved_cwd, saved_streams = dict(os.environ), os.getcwd(), (sys.stdin, sys.stdout, sys.stderr)
    out, err, status = io.StringIO(), io.StringIO(), 0
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    with _stdin(stdin) as source:
        sys.stdin, sys.stdout, sys.stderr = source, out, err
        try:
            run_app(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


@contextmanager
def _stdin(text: str | None) -> Iterator[TextIO]:
    """/dev/null, or the read end of a pipe that a thread writes `text` into and then closes (a pipe holds
    64 KiB: the writer must not be the reader)."""
    if text is None:
        with open(os.devnull) as devnull:
            yield devnull
        return
    read_end, write_end = os.pipe()

    def write() -> None:
        with suppress(BrokenPipeError), open(write_end, "wb") as sink:  # closing may find the reader gone too
            sink.write(text.encode())

    writer = threading.Thread(target=write, name="test-stdin", daemon=True)
    writer.start()
    with open(read_end) as source:
        yield source
    writer.join(timeout=60)


needs_sandbox = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="needs bubblewrap: without it, commands that are not read-only ask first even in auto mode "
           "(what tests/test_sandbox_e2e.py checks on such a machine)")
"""For tests of something else that let the model run a changing command unattended."""


def not_about_the_sandbox(lines: list[str]) -> list[str]:
    """`lines` without the warning a machine without bubblewrap gives at every start."""
    return [line for line in lines if "bubblewrap is not installed" not in line]


YOUNG = gc.get_threshold()[0]
"""The young generation's collection threshold, not held (`swecli.collector`)."""


class Node:
    """A container object CPython counts for collection (a class instance; lists and dicts come from free
    lists), in a cycle only a collection frees."""

    def __init__(self) -> None:
        self.me = self


def garbage(rounds: int = 5) -> None:
    """Enough cyclic garbage to make an unheld young-generation collection due `rounds` times over."""
    for _ in range(rounds * YOUNG):
        Node()


@contextmanager
def watching_collections(callback: Callable[[str, dict[str, Any]], None]) -> Iterator[None]:
    """`callback` sees every collection (`gc.callbacks`) while inside; the collector must be on to begin with."""
    assert gc.isenabled()
    gc.callbacks.append(callback)
    try:
        yield
    finally:
        gc.callbacks.remove(callback)
