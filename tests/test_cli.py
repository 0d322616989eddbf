"""The command line as a user meets it: fast start-up, clear errors, never a traceback."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers import swecli_in_process

HEAVY = ("httpx", "prompt_toolkit", "rich", "tiktoken", "pydantic", "swecli.agent", "swecli.llm.openai")


def swecli(*args: str, cwd: Path, env: dict[str, str] | None = None,
           process: bool = False) -> subprocess.CompletedProcess[str]:
    """`swecli ARGS` in this process (`tests.helpers.swecli_in_process`: the same parsing, messages and exit
    status), or with `process` a real one (what start-up itself does)."""
    import os

    full_env = {**os.environ, **(env or {})}
    if not process:
        return swecli_in_process(list(args), cwd, full_env)
    return subprocess.run([sys.executable, "-m", "swecli", *args], cwd=cwd, env=full_env, text=True,
                          capture_output=True, timeout=120, stdin=subprocess.DEVNULL)


def loaded_modules(argv: list[str]) -> set[str]:
    code = ("import sys, json\nsys.argv = " + json.dumps(["swecli", *argv]) + "\nfrom swecli.entry import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write(json.dumps(sorted(m for m, v in sys.modules.items() if v is not None)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


def test_version_and_help_do_not_load_provider_or_ui_stacks() -> None:
    for argv in (["--version"], ["--help"]):
        heavy = [m for m in loaded_modules(argv) if m.split(".")[0] in HEAVY or m in HEAVY]
        assert heavy == [], f"swecli {' '.join(argv)} imported {heavy}"


def test_version_prints(project: Path) -> None:
    out = swecli("--version", cwd=project, process=True)
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


def test_help_names_what_each_option_takes_and_keeps_whole_lines(project: Path) -> None:
    out = swecli("--help", cwd=project, env={"COLUMNS": "100"})
    assert out.returncode == 0
    assert "<str>" not in out.stdout and "<int>" not in out.stdout and "list[str]" not in out.stdout
    assert "-p, --print [TASK]" in out.stdout and "--max-iterations N" in out.stdout
    init_line = next(line for line in out.stdout.splitlines() if line.strip().startswith("init "))
    assert init_line.rstrip().endswith("OPENCLI.md.")
    commands = out.stdout.split("Commands:")[1].strip().splitlines()
    assert len(commands) >= 3 and not [line for line in commands if line.rstrip().endswith("...")]  # none cut
    sessions = swecli("sessions", "--help", cwd=project, env={"COLUMNS": "100"})
    assert "--delete ID" in sessions.stdout and "--older-than DAYS" in sessions.stdout


def test_subcommands_still_parse_beside_positional_tasks(project: Path) -> None:
    listing = swecli("sessions", cwd=project)
    assert listing.returncode == 0 and "No sessions yet" in listing.stdout
    logs = swecli("logs", cwd=project)
    assert logs.returncode == 2 and "Traceback" not in logs.stderr
    typo = swecli("sesions", cwd=project)
    assert typo.returncode == 2 and "did you mean `swecli sessions`" in typo.stderr


def test_delete_old_needs_older_than(project: Path) -> None:
    out = swecli("sessions", "--delete-old", cwd=project)
    assert out.returncode == 2
    assert out.stderr.strip() == ("swecli: --delete-old needs --older-than DAYS, e.g. swecli sessions --delete-old "
                                  "--older-than 30.")


def test_config_errors_suggest_the_closest_name_and_say_who_chose_what(project: Path) -> None:
    config = project / ".swecli" / "config.toml"
    config.parent.mkdir()
    cases = [
        ('modle = "gpt-4.1"\n', "unknown key 'modle' (did you mean 'model'?)"),
        ('provider = "opnai"\n', "unknown provider 'opnai' (did you mean 'openai'?)"),
        ('provider = "openai"\n', f"provider 'openai' (chosen by {config}) needs an API key; set OPENAI_API_KEY"),
        ("context = 5\n", "'context' is a section, not a value; write its settings under a [context] table"),
    ]
    for text, message in cases:
        config.write_text(text)
        out = swecli("-p", "hi", "--trust-project", cwd=project, env={"OPENAI_API_KEY": ""})
        assert out.returncode == 2 and message in out.stderr, (text, out.stderr)
        assert "ContextConfig" not in out.stderr and "Traceback" not in out.stderr


def test_mcp_add_list_remove_with_the_real_time_server(project: Path) -> None:
    import os
    import stat

    (project / ".swecli").mkdir()
    config = project / ".swecli" / "config.toml"
    config.write_text("# hand-written\nmax_iterations = 50  # enough\n")
    added = swecli("mcp", "add", "time", "--", "mcp-server-time", "--local-timezone", "UTC", cwd=project)
    assert added.returncode == 0 and "Added MCP server time" in added.stdout, added.stderr
    # The default scope is local: private to this user and project, in the user's config directory.
    local = Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "local.toml"
    assert f'{local} [projects."{project.resolve()}"] (local scope)' in added.stdout
    assert config.read_text() == "# hand-written\nmax_iterations = 50  # enough\n"
    assert stat.S_IMODE(local.stat().st_mode) == 0o600
    listed = swecli("mcp", "list", cwd=project)  # starts the server (a process of its own), lists it, stops it
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].startswith("time · ready in ") and "stdio: mcp-server-time --local-timezone UTC" in lines[0]
    assert lines[0].endswith(" · local scope")
    tool = next(line for line in lines if "mcp__time__get_current_time" in line)
    assert "Get current time in a specific timezone" in tool and " tokens  loaded · read-only" in tool
    assert "MCP tool schemas:" in lines[-1] and "all loaded" in lines[-1]
    removed = swecli("mcp", "remove", "time", cwd=project)
    assert removed.returncode == 0 and "Removed MCP server time" in removed.stdout and "(local scope)" in removed.stdout
    assert swecli("mcp", "list", cwd=project).stdout.startswith("No MCP servers configured.")
    # The project scope edits the shared file, comments kept.
    shared = swecli("mcp", "add", "time", "-s", "project", "--", "mcp-server-time", cwd=project)
    assert shared.returncode == 0 and "(project scope)" in shared.stdout and shared.stderr == ""
    assert config.read_text().startswith("# hand-written\nmax_iterations = 50  # enough\n\n[mcp.servers.time]")


def test_mcp_tokens_stay_out_of_the_project_unless_asked_and_then_a_warning(project: Path) -> None:
    import os

    config = project / ".swecli" / "config.toml"
    local = Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "local.toml"
    private = swecli("mcp", "add", "docs", "--url", "https://mcp.example.com/mcp", "-H",
                     "Authorization=Bearer ghp_0123456789abcdefghijABCDEFGHIJ", cwd=project)
    assert private.returncode == 0 and private.stderr == "" and not config.exists()
    assert "ghp_0123456789abcdefghijABCDEFGHIJ" in local.read_text()
    shared = swecli("mcp", "add", "team", "-s", "project", "--url", "https://mcp.example.com/mcp", "-H",
                    "Authorization=Bearer ghp_0123456789abcdefghijABCDEFGHIJ", cwd=project)
    assert shared.returncode == 0
    assert shared.stderr.startswith("swecli: warning: headers.Authorization of team holds what looks like a secret")
    assert "Authorization=Bearer ${GITHUB_TOKEN}" in shared.stderr
    reference = swecli("mcp", "add", "ref", "-s", "project", "--url", "https://mcp.example.com/mcp", "-H",
                       "Authorization=Bearer ${GITHUB_TOKEN}", cwd=project)
    assert reference.returncode == 0 and reference.stderr == ""
    assert 'Authorization = "Bearer ${GITHUB_TOKEN}"' in config.read_text()
    # A name is configured once; removing asks for the scope only when it is ambiguous.
    again = swecli("mcp", "add", "docs", "-s", "user", "--url", "https://x.example.com/mcp", cwd=project)
    assert again.returncode == 2 and "already configured in" in again.stderr and "(local scope)" in again.stderr
    wrong = swecli("mcp", "remove", "docs", "--scope", "project", cwd=project)
    assert wrong.returncode == 2 and "it is in the local scope" in wrong.stderr
    bad = swecli("mcp", "add", "x", "--scope", "team", "--", "cmd", cwd=project)
    assert bad.returncode == 2 and bad.stderr == "swecli: --scope takes local, project or user, not 'team'.\n"
    assert swecli("mcp", "remove", "docs", cwd=project).returncode == 0
    assert "projects" not in local.read_text()  # the emptied tables are gone


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


def test_mcp_list_budgets_from_the_window_the_server_reports_as_a_session_does(project: Path) -> None:
    from swecli.testing.server import ScriptedLLM, ServerInfo

    with ScriptedLLM([], info=ServerInfo(kind="llamacpp", window=64_000)) as llm:
        # The user's own settings: a project's base_url would wait for trust.
        mine = {"SWECLI_PROVIDER": "openai-compatible", "SWECLI_BASE_URL": llm.base_url,
                "SWECLI_MODEL": "scripted-model"}
        # The budget is the LLM server's to set, whatever the MCP server does: one that cannot start will do.
        assert swecli("mcp", "add", "ghost", "--", "no-such-mcp-server-xyz", cwd=project, env=mine).returncode == 0
        listed = swecli("mcp", "list", cwd=project, env=mine)
    assert listed.returncode == 1 and "ghost · failed: command not found" in listed.stdout, listed.stderr
    assert "budget 6,400 (mcp.schema_budget)" in listed.stdout.splitlines()[-1]  # 10% of 64,000, not of 32k


def test_every_help_page_shows_plain_metavars_and_whole_command_lines(project: Path) -> None:
    pages = [[], ["init"], ["logs"], ["sessions"], ["repomap"], ["skills"], ["skills", "list"], ["mcp"],
             ["mcp", "list"], ["mcp", "add"], ["mcp", "remove"]]
    for page in pages:
        shown = swecli(*page, "--help", cwd=project, env={"COLUMNS": "100"})
        assert shown.returncode == 0, (page, shown.stderr)
        for typer_ism in ("<str>", "<int", "<list", "<bool>", "{name}", "{NAME}", "[["):
            assert typer_ism not in shown.stdout, (page, typer_ism, shown.stdout)
        commands = shown.stdout.partition("\nCommands:\n")[2]
        assert not any(line.rstrip().endswith("...") for line in commands.splitlines()), (page, commands)


def test_input_piped_to_p_that_has_not_ended_is_named_then_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe nobody has written to yet, after `wait_notice` seconds (0: at once): swecli says what it waits for,
    then reads what comes to the end. The writer writes only once the note is out: no clock decides."""
    from swecli.cli import read_piped_input

    read_end, write_end = os.pipe()

    class Stderr(io.StringIO):
        def write(self, text: str) -> int:
            if "waiting for the input piped to stdin" in text and write_end not in closed:
                os.write(write_end, b"fix the failing test\n")
                os.close(write_end)
                closed.append(write_end)
            return super().write(text)

    def give_up() -> None:  # no note, no input: the read ends (and the test fails) instead of hanging
        stderr.write("waiting for the input piped to stdin: never said")

    closed: list[int] = []
    stderr = Stderr()
    watchdog = threading.Timer(60, give_up)
    watchdog.start()
    with open(read_end) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        monkeypatch.setattr(sys, "stderr", stderr)
        piped = read_piped_input(required=True, notice=0)
    watchdog.cancel()
    assert piped is not None and piped.text(1000) == "fix the failing test\n"
    assert "(run with < /dev/null to skip it)" in stderr.getvalue()
