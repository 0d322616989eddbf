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
