"""`swecli -p` from start to exit: what it waits for (MCP servers, up to their setting), what it never
waits for (a cold repository map), and what it never imports when nothing needs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from swecli.repomap.builder import build_lock
from swecli.repomap.index import PARALLEL_FROM, cache_path
from swecli.repomap.repomap import RepoMap
from swecli.testing.server import Call, Reply, ScriptedLLM
from swecli.tools.sandbox import unavailable_reason
from tests.helpers import not_about_the_sandbox, tool_results
from tests.mcp.conftest import launcher_args
from tests.ui.test_headless import run_swecli


def test_p_exits_while_a_cold_map_builds_and_the_next_run_finds_it_saved(project: Path) -> None:
    for i in range(PARALLEL_FROM + 30):
        path = project / "pkg" / f"m{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"def handler_{i}(event):\n    return event\n")
    # Hold the builder's lock as another builder would: the map cannot be ready before this run ends.
    with build_lock(project), ScriptedLLM([Reply("done")]) as llm:
        out = run_swecli(project, llm, "-p", "what does handler_7 return?")
        assert out.returncode == 0, out.stderr
        assert out.stdout == "done\n"
        assert "repository map unavailable" in out.stderr  # retrieval kept its deadline and said why
        assert not cache_path(project).exists()
    deadline = time.monotonic() + 300  # the run's builder, left behind, now builds and saves
    while not (cache_path(project).exists() and (project / ".swecli/repomap/bm25.json").exists()):
        assert time.monotonic() < deadline, "the builder never saved the map"
        time.sleep(0.2)
    with build_lock(project):  # the builder has finished
        assert RepoMap.build(project, max_parse=0).index.parsed == 0
    with ScriptedLLM([Reply("done")]) as llm:
        again = run_swecli(project, llm, "-p", "what does handler_7 return?")
    assert again.returncode == 0 and "repository map unavailable" not in again.stderr
    assert "pkg/m7.py" in llm.requests[0]["messages"][1]["content"]  # attached from the saved map


def hooked(hook: str, report: str) -> str:
    """A script that runs `swecli ARGS...` under the audit hook `note` that `hook` defines, then prints
    `report` as JSON (`code` is swecli's exit status)."""
    return (f"import json, os, runpy, sys, threading\n{hook.strip()}\nsys.addaudithook(note)\n"
            'sys.argv = ["swecli", *sys.argv[1:]]\ntry:\n    runpy.run_module("swecli", run_name="__main__")\n'
            f"except SystemExit as done:\n    code = done.code\nprint(json.dumps({report.strip()}))\n")


MODULES_SCRIPT = hooked(r"""
at_connect = []
def note(event, args):  # what was imported when each connection opened; the last one sends the task
    if event == "socket.connect":
        at_connect.append(sorted(m for m, module in sys.modules.items() if module is not None))
heavy = ("numpy", "bm25s", "mcp", "starlette", "uvicorn", "click", "markdown_it", "pygments")
""", """{"code": code, "loaded": sorted({m for m, module in sys.modules.items() if module is not None and (
    m.split(".")[0] in heavy or m == "httpx._main")}), "at_request": at_connect[-1] if at_connect else None}""")

NOT_BEFORE_THE_FIRST_REQUEST = (
    "rich", "prompt_toolkit", "pathspec", "tomlkit", "yaml", "PIL", "json5", "numpy", "bm25s", "mcp", "click",
    "markdown_it", "pygments", "swecli.ui.repl", "swecli.ui.render", "swecli.mcp.manager", "swecli.memory.reflector",
    "swecli.delegation.runner", "swecli.context.compaction", "swecli.context.background", "swecli.context.hooks",
    "swecli.context.archive", "swecli.context.foldahead", "concurrent.futures", "swecli.memory.init",
    "swecli.memory.scan", "importlib.metadata", "zipfile", "csv", "statistics", "gzip", "shlex", "swecli.replies",
    "swecli.context.references", "swecli.context.extract",
)
# Not listed: the shell parser (guard, tree-sitter) and tiktoken, which `tools.bash.get_ready` and the vocabulary's
# prefetch load on threads started as the first request starts: they may be in by the time it connects.
"""What a -p run's first request never waits for: the terminal UI and its drawing (rich: only to ask about
trust or draw Markdown), the vocabulary (loaded while the request is in flight), the shell parser (the first
command), the map's parsers (its builder), MCP (a configured server), numpy and bm25s (building an index), the
playbook's reflector (the first completed task), the sub-agents' runner (the first `task` call), the compaction
stack (the summarizer, the background summary, the PreCompact hook, the archive, the digests made ahead: the
first compaction, summary or fold), `concurrent.futures` (sub-agents run side by side) and /init's scan (a
memory file's confined read lives in `memory.opencli`, not beside /init: ~16 M). Each was
on the path once and cost 0.01-3 s of CPU; docs/latency.md measures the path. Smaller, on the main thread, ~90 M
instructions together: pydantic's plugin lookup (`importlib.metadata`, zipfile, csv: `entry.skip_pydantic_plugins`),
the reply's reading (`replies`: once the reply is in), the summary's references (compaction), the runway's
averages (`statistics`: once there are samples), the gzipped vocabulary."""


def early_imports(found: dict[str, Any]) -> list[str]:
    """The modules of NOT_BEFORE_THE_FIRST_REQUEST that were imported when the first request was sent."""
    assert found["at_request"], "no connection was opened"
    return [m for m in found["at_request"] if any(m == name or m.startswith(name + ".")
                                                  for name in NOT_BEFORE_THE_FIRST_REQUEST)]


def test_p_imports_nothing_it_does_not_use(project: Path) -> None:
    (project / "notes.md").write_text("# notes\n")
    env = {**os.environ, "SWECLI_CONTEXT__JUST_IN_TIME": "false"}
    with ScriptedLLM([Reply("done")]) as llm:
        out = subprocess.run([sys.executable, "-c", MODULES_SCRIPT, "--provider", "openai-compatible", "--base-url",
                              llm.base_url, "--model", "scripted-model", "-p", "say done"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["code"] == 0, out.stderr
    assert found["loaded"] == []  # no MCP server, no retrieval, no answer drawn as Markdown
    assert early_imports(found) == []


def test_p_loads_no_pydantic_plugin_installed_beside_it(project: Path, tmp_path: Path) -> None:
    """A pydantic plugin is any installed distribution's `pydantic` entry point, and pydantic calls it with every
    value it validates: swecli's settings (API keys), the conversation, tool arguments. swecli loads none."""
    site, seen = tmp_path / "site", tmp_path / "seen.txt"
    (site / "observer-1.0.dist-info").mkdir(parents=True)
    (site / "observer-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: observer\nVersion: 1.0\n")
    (site / "observer-1.0.dist-info" / "entry_points.txt").write_text("[pydantic]\nobserver = observer:plugin\n")
    (site / "observer.py").write_text(
        "import pathlib\n"
        "class _Plugin:\n"
        "    def new_schema_validator(self, schema, schema_type, *rest):\n"
        f"        with open({str(seen)!r}, 'a') as f:\n"
        "            f.write(getattr(schema_type, '__name__', '?') + '\\n')\n"
        "        return None, None, None\n"
        "plugin = _Plugin()\n")
    env = {**os.environ, "PYTHONPATH": str(site), "SWECLI_CONTEXT__JUST_IN_TIME": "false"}
    model = "from pydantic import BaseModel\nclass A(BaseModel):\n    x: int = 0"
    probe = subprocess.run([sys.executable, "-c", model], env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and seen.read_text() == "A\n"  # pydantic itself would load it
    seen.unlink()
    with ScriptedLLM([Reply("done")]) as llm:
        out = subprocess.run([sys.executable, "-m", "swecli", "--provider", "openai-compatible", "--base-url",
                              llm.base_url, "--model", "scripted-model", "-p", "say done"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.returncode == 0 and out.stdout == "done\n", out.stderr
    assert not seen.exists()


HTTP_SCRIPT = r"""
import json, runpy, sys, threading
first = {}
def note(event, args):  # the thread that imports httpx (and then builds the certificate store: transport.ssl_context)
    if event == "import" and args[0] == "httpx":
        first.setdefault("httpx", threading.current_thread().name)
sys.addaudithook(note)
sys.argv = ["swecli", *sys.argv[1:]]
try:
    runpy.run_module("swecli", run_name="__main__")
except SystemExit:
    pass
print(json.dumps(first))
"""


def test_p_builds_its_http_client_s_certificates_beside_the_session_s_imports(project: Path) -> None:
    # No window to ask (so no window probe's thread): the provider's client was built on the main thread, with
    # httpx's import and OpenSSL reading the certificate bundle (~0.2-0.4 s of CPU) on the way to the request.
    env = {**os.environ, "SWECLI_CONTEXT__JUST_IN_TIME": "false", "SWECLI_PROBE_CONTEXT_WINDOW": "false"}
    with ScriptedLLM([Reply("done")]) as llm:
        out = subprocess.run([sys.executable, "-c", HTTP_SCRIPT, "--provider", "openai-compatible", "--base-url",
                              llm.base_url, "--model", "scripted-model", "-p", "say done"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert llm.requests, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"httpx": "swecli-http"}


PROBE_SCRIPT = hooked(r"""
seen = []
def note(event, args):  # programs run, the seccomp binding's import and the chat request's connect, in order
    if event == "subprocess.Popen":
        seen.append(os.path.basename(str(args[0])))
    elif event == "import" and args[0] == "pyseccomp" and args[0] not in sys.modules:
        seen.append("import pyseccomp")
    elif event == "socket.connect" and threading.current_thread().name == "swecli-stream":
        seen.append("request")
""", '{"code": code, "seen": seen}')


@pytest.mark.skipif(bool(unavailable_reason()), reason=f"bwrap cannot run here: {unavailable_reason()}")
def test_p_probes_the_sandbox_once_its_first_request_is_out_and_before_its_first_command(project: Path) -> None:
    # The probe (a bwrap run, `ldconfig -p` four times, the seccomp binding's load) ran on a thread beside the
    # start, and its interpreter time was the main thread's on the way to the first request.
    steps = [Reply(calls=[Call("bash", {"command": "echo made > made.txt"})]), Reply("done")]
    with ScriptedLLM(steps) as llm:
        out = subprocess.run([sys.executable, "-c", PROBE_SCRIPT, "--provider", "openai-compatible", "--base-url",
                              llm.base_url, "--model", "scripted-model", "-p", "make a file", "--mode", "auto"],
                             cwd=project, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["code"] == 0, out.stderr
    seen = found["seen"]
    first = seen.index("request")
    assert "bwrap" not in seen[:first] and "ldconfig" not in seen[:first] and "import pyseccomp" not in seen[:first]
    assert seen.count("ldconfig") == 1  # one listing answers ctypes' four questions
    assert seen.index("import pyseccomp") < len(seen) - seen[::-1].index("bwrap") - 1  # the filter, then the command
    assert (project / "made.txt").read_text() == "made\n"  # run: the probe found the sandbox working, in auto mode
    assert tool_results(llm.requests[1]) == ["(no output)\nexit code 0"]


def test_a_warm_p_run_retrieves_without_numpy(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "greet.py").write_text('def greet(name):\n    return "Helo, " + name\n')
    (project / "src" / "farewell.py").write_text('def farewell(name):\n    return "Bye, " + name\n')
    loaded = []
    for _ in range(2):  # the first run builds and saves the index (a small one: without bm25s); the second reads it
        with ScriptedLLM([Reply("done")]) as llm:
            out = subprocess.run([sys.executable, "-c", MODULES_SCRIPT, "--provider", "openai-compatible",
                                  "--base-url", llm.base_url, "--model", "scripted-model", "-p",
                                  "the greet function misspells Hello"], cwd=project, capture_output=True, text=True,
                                 timeout=120, stdin=subprocess.DEVNULL)
        found = json.loads(out.stdout.strip().splitlines()[-1])
        assert found["code"] == 0, out.stderr
        loaded.append(found["loaded"])
        assert "src/greet.py" in llm.requests[0]["messages"][1]["content"]  # retrieval found it both times
    assert loaded == [[], []]  # numpy neither for the cold build of a small project nor for the warm read
    assert early_imports(found) == []  # with retrieval on, warm: the map and the index read, nothing heavy


def _mcp_config(servers: dict[str, list[str]], startup_timeout: float, repl_wait: float = 5.0) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "swecli" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"[mcp]\nstartup_timeout = {startup_timeout}\nrepl_wait = {repl_wait}\n"]
    for name, args in servers.items():
        lines.append(f"[mcp.servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n")
    config.write_text("\n".join(lines))


def test_p_waits_for_a_slow_mcp_server(project: Path) -> None:
    # The REPL's grace (mcp.repl_wait, 5 s) made short, so that a server ready a second later is past it without
    # the test waiting 5 s: -p's wait is another (mcp.startup_timeout), and only that one lets the server in.
    slow_start = launcher_args("import time; time.sleep(1)")  # the test server (forked), a second late
    _mcp_config({"slow": slow_start}, startup_timeout=300, repl_wait=0.2)  # the wait ends when the server is ready
    with ScriptedLLM([Reply("done")]) as llm:
        out = run_swecli(project, llm, "-p", "say done")
    assert out.returncode == 0, out.stderr
    tools = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert "mcp__slow__echo" in tools  # waited past the REPL's grace for it
    assert "waiting up to 300s (mcp.startup_timeout) for MCP server(s) slow" in out.stderr
    assert "warning" not in "\n".join(not_about_the_sandbox(out.stderr.splitlines()))


def test_p_names_an_mcp_server_that_never_starts(project: Path) -> None:
    # A server that never answers and ends when swecli closes its stdin. One that also ignores the end of its
    # input is killed 2 s later (the SDK's wait): tests/mcp/test_manager.py's hung server, not this test's subject.
    _mcp_config({"stuck": ["-c", "import sys; sys.stdin.read()"]}, startup_timeout=0.5)
    with ScriptedLLM([Reply("done")]) as llm:
        out = run_swecli(project, llm, "-p", "say done")
    assert out.returncode == 0, out.stderr
    assert not any(t["function"]["name"].startswith("mcp__") for t in llm.requests[0]["tools"])
    warnings = [line for line in not_about_the_sandbox(out.stderr.splitlines()) if line.startswith("warning:")]
    assert len(warnings) == 1 and "stuck" in warnings[0]
    assert "not ready after 0.5s" in warnings[0] or "did not start within 0.5s" in warnings[0]
