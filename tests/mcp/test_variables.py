"""`${VAR}` in MCP server settings, expanded at start; literal secrets found for the project-scope warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from swecli.config import McpServerConfig
from swecli.mcp.variables import MissingVariable, expand, literal_secrets
from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from tests.helpers import swecli_in_process
from tests.mcp.conftest import launcher_args


def test_references_are_expanded_everywhere_a_server_is_described() -> None:
    server = McpServerConfig(command="${TOOL_BIN:-/usr/bin}/srv", args=["--token", "${TOKEN}"],
                             env={"KEY": "${TOKEN}", "PLAIN": "1"})
    env = {"TOKEN": "t0k3n"}
    assert expand(server, env) == McpServerConfig(command="/usr/bin/srv", args=["--token", "t0k3n"],
                                                  env={"KEY": "t0k3n", "PLAIN": "1"})
    http = McpServerConfig(url="https://${HOST}/mcp", headers={"Authorization": "Bearer ${GITHUB_TOKEN}"})
    assert expand(http, {"HOST": "mcp.example.com", "GITHUB_TOKEN": "ghp_x"}).headers == {"Authorization":
                                                                                          "Bearer ghp_x"}
    with pytest.raises(MissingVariable, match=r"GITHUB_TOKEN is not set \(it is used in headers\.Authorization\)"):
        expand(http, {"HOST": "h"})
    assert expand(McpServerConfig(command="a $HOME ${}"), {}).command == "a $HOME ${}"  # only ${NAME} is a reference


def test_literal_secrets_are_found_and_references_are_not() -> None:
    literal = McpServerConfig(url="https://mcp.example.com/mcp?api_key=abcdef123456",
                              headers={"Authorization": "Bearer abcdef0123456789", "Accept": "application/json"})
    assert literal_secrets(literal) == ["headers.Authorization", "url"]
    assert literal_secrets(McpServerConfig(command="srv", args=["--api-key=0123456789abc"],
                                           env={"GITHUB_TOKEN": "ghp_0123456789abcdefghijABCDEFGHIJ",
                                                "LOG_LEVEL": "debug"})) == ["env.GITHUB_TOKEN", "args"]
    safe = McpServerConfig(url="https://mcp.example.com/mcp", headers={"Authorization": "Bearer ${GITHUB_TOKEN}",
                                                                       "X-Api-Key": "${KEY}"})
    assert literal_secrets(safe) == []
    assert literal_secrets(McpServerConfig(command="srv", args=["--token", "${TOKEN}"], env={"TOKEN": "1"})) == []


def test_a_reference_is_filled_from_the_environment_in_a_real_run(project: Path, tmp_path: Path) -> None:
    """Through the real command line (in this process: the subject is the settings, not the process):
    `swecli mcp add` keeps `${NOTES_DIR}` as written; `swecli -p` starts the server (a forked one behind a
    real launcher process) with it expanded, and without the variable the server fails with a sentence
    naming it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}
    added = swecli_in_process(["mcp", "add", "kit", "-e", "NOTES_FILE=${NOTES_DIR}/notes.txt", "--",
                               sys.executable, *launcher_args()], project, env)
    assert added.returncode == 0, added.stderr
    local = Path(env["XDG_CONFIG_HOME"]) / "swecli" / "local.toml"
    assert 'NOTES_FILE = "${NOTES_DIR}/notes.txt"' in local.read_text()
    notes = tmp_path / "notes"
    notes.mkdir()
    llm = ScriptedLLM()

    def step(body: dict[str, Any]) -> Step:
        """Wait (at most 40 requests) for the server's tools to join, call one, then finish."""
        called = [c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or []]
        if "mcp__kit__write_note" in called or len(llm.requests) > 40:
            return Reply("noted")
        if "mcp__kit__write_note" in json.dumps(body.get("tools", [])):
            return Reply(calls=[Call("mcp__kit__write_note", {"title": "t", "body": "hello"})])
        time.sleep(0.5)  # the server is still starting: look at something meanwhile
        return Reply(calls=[Call("list_files", {"path": "."})])

    def run(extra: dict[str, str], steps: list[Step]) -> subprocess.CompletedProcess[str]:
        nonlocal llm
        with ScriptedLLM(steps, strict=False) as llm:
            return swecli_in_process(["--provider", "openai-compatible", "--base-url", llm.base_url, "--model",
                                      "scripted-model", "--mode", "auto", "-p", "note it"], project, {**env, **extra})

    done = run({"NOTES_DIR": str(notes)}, [step] * 42)
    assert done.returncode == 0, done.stderr
    assert (notes / "notes.txt").exists(), done.stderr
    assert "hello" in (notes / "notes.txt").read_text()
    failed = run({}, [Reply("noted")])  # the server fails at once: the first request goes without its tools
    assert "mcp__kit__write_note" not in json.dumps(llm.requests[-1]["tools"])
    assert ("MCP server kit failed to start: the environment variable NOTES_DIR is not set (it is used in "
            "env.NOTES_FILE)") in failed.stderr
