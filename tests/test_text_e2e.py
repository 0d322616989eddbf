"""Text as it reaches the model and the disk, through the real `swecli -p` and the scripted server: files in
their own encoding (read, mentioned, searched, edited and written back in it), and files the agent writes
with the modes the user's other programs would give them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from swecli.testing.server import Call, Reply, ScriptedLLM, Step
from tests.helpers import tool_results


def swecli_p(project: Path, llm: ScriptedLLM, task: str, **popen: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWECLI_")}
    command = [sys.executable, "-m", "swecli", "--provider", "openai-compatible", "--base-url", llm.base_url,
               "--model", "scripted-model", "--mode", "auto", "-p", task]
    return subprocess.run(command, cwd=project, env=env, text=True, capture_output=True, timeout=120,
                          stdin=subprocess.DEVNULL, **popen)


def test_a_latin1_file_is_read_searched_mentioned_and_edited_in_its_own_encoding(project: Path) -> None:
    menu = project / "menu.txt"
    original = "Carte du jour\r\ncafé crème 2,50\r\nthé 2,00\r\n".encode("latin-1")
    menu.write_bytes(original)
    steps: list[Step] = [
        Reply(calls=[Call("read_file", {"path": "menu.txt"})]),
        Reply(calls=[Call("grep", {"pattern": "crème"})]),
        Reply(calls=[Call("edit_file", {"path": "menu.txt", "old_string": "café crème", "new_string": "café noir"})]),
        Reply("Renamed the drink."),
    ]
    with ScriptedLLM(steps) as llm:
        out = swecli_p(project, llm, "rename the coffee in @menu.txt")
    assert out.returncode == 0, out.stderr
    mentioned = json.dumps(llm.requests[0]["messages"], ensure_ascii=False)
    assert "café crème 2,50" in mentioned and "\ufffd" not in mentioned  # the @mention
    read, found, edited = tool_results(llm.requests[3])
    assert "     2\tcafé crème 2,50" in read
    assert "menu.txt\n  2: café crème 2,50" in found
    assert "Edited menu.txt" in edited and "+café noir 2,50" in edited
    assert menu.read_bytes() == original.replace("café crème".encode("latin-1"), "café noir".encode("latin-1"))


def test_new_files_follow_the_umask_and_edited_files_keep_their_mode(project: Path) -> None:
    script = project / "deploy.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    steps: list[Step] = [
        Reply(calls=[Call("write_file", {"path": "docs/page.html", "content": "<p>hi</p>\n"})]),
        Reply(calls=[Call("edit_file", {"path": "deploy.sh", "old_string": "old", "new_string": "new"})]),
        Reply(calls=[Call("write_file", {"path": "deploy.sh", "content": "echo newer\n"})]),
        Reply("Done."),
    ]
    with ScriptedLLM(steps) as llm:
        out = swecli_p(project, llm, "write the page and update the script", umask=0o027)
    assert out.returncode == 0, out.stderr
    assert stat.S_IMODE((project / "docs" / "page.html").stat().st_mode) == 0o640  # 0666 less umask 027
    assert script.read_text() == "echo newer\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
