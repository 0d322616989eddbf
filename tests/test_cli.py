"""The command line as a user meets it: fast start-up, clear errors, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("httpx", "prompt_toolkit", "rich", "tiktoken", "pydantic", "swecli.agent", "swecli.llm.openai")


def swecli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "swecli", *args], cwd=cwd, env=full_env, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def loaded_modules(argv: list[str]) -> set[str]:
    code = ("import sys, json\nsys.argv = " + json.dumps(["swecli", *argv]) + "\nfrom swecli.entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nsys.stderr.write(json.dumps(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


def test_version_and_help_do_not_load_provider_or_ui_stacks() -> None:
    for argv in (["--version"], ["--help"]):
        heavy = [m for m in loaded_modules(argv) if m.split(".")[0] in HEAVY or m in HEAVY]
        assert heavy == [], f"swecli {' '.join(argv)} imported {heavy}"


def test_version_prints(project: Path) -> None:
    out = swecli("--version", cwd=project)
    assert out.returncode == 0 and out.stdout.strip().startswith("swecli ")


def test_bad_config_is_one_sentence_not_a_traceback(project: Path) -> None:
    (project / ".swecli").mkdir()
    (project / ".swecli" / "config.toml").write_text('provider = "openai"\nmood = "happy"\n')
    out = swecli("-p", "hi", cwd=project)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "config.toml" in out.stderr and "'mood'" in out.stderr


def test_missing_key_names_the_variable(project: Path) -> None:
    out = swecli("-p", "hi", "--provider", "anthropic", cwd=project)
    assert out.returncode == 2 and "ANTHROPIC_API_KEY" in out.stderr and "Traceback" not in out.stderr


def test_bad_output_format(project: Path) -> None:
    out = swecli("-p", "hi", "--output-format", "xml", cwd=project)
    assert out.returncode == 2 and "--output-format" in out.stderr


def test_mcp_add_list_remove_with_the_real_time_server(project: Path) -> None:
    (project / ".swecli").mkdir()
    config = project / ".swecli" / "config.toml"
    config.write_text("# hand-written\nmax_iterations = 50  # enough\n")
    added = swecli("mcp", "add", "time", "--", "mcp-server-time", "--local-timezone", "UTC", cwd=project)
    assert added.returncode == 0 and "Added MCP server time" in added.stdout, added.stderr
    assert config.read_text().startswith("# hand-written\nmax_iterations = 50  # enough\n")
    listed = swecli("mcp", "list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("time · ready in ") and "stdio: mcp-server-time --local-timezone UTC" in lines[0]
    tool = next(line for line in lines if "mcp__time__get_current_time" in line)
    assert "Get current time in a specific timezone" in tool and " tokens  loaded · read-only" in tool
    assert "MCP tool schemas:" in lines[-1] and "all loaded" in lines[-1]
    removed = swecli("mcp", "remove", "time", cwd=project)
    assert removed.returncode == 0 and "Removed MCP server time" in removed.stdout
    assert swecli("mcp", "list", cwd=project).stdout.startswith("No MCP servers configured.")


def test_mcp_mistakes_are_one_sentence(project: Path) -> None:
    neither = swecli("mcp", "add", "x", cwd=project)
    assert neither.returncode == 2 and neither.stderr.startswith("swecli: give the server either a command")
    bad_env = swecli("mcp", "add", "x", "--env", "NOVALUE", "--", "cmd", cwd=project)
    assert bad_env.returncode == 2 and bad_env.stderr == "swecli: --env takes KEY=VALUE, not 'NOVALUE'.\n"
    missing = swecli("mcp", "add", "ghost", "--", "no-such-mcp-server-xyz", cwd=project)
    assert missing.returncode == 0
    listed = swecli("mcp", "list", cwd=project)
    assert listed.returncode == 1 and "ghost · failed: command not found: no-such-mcp-server-xyz" in listed.stdout
    assert "Traceback" not in listed.stderr + bad_env.stderr + neither.stderr
