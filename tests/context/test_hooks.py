from __future__ import annotations

import json
import sys
from pathlib import Path

from swecli.context.hooks import PreCompactDecision, PreCompactInput, parse_decision, run_pre_compact

PAYLOAD = PreCompactInput(trigger="manual", tokens=1234, window=8000, message_count=42, focus="the API")


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "hook.py"
    path.write_text(body, encoding="utf-8")
    return f"{sys.executable} {path}"


def test_command_receives_json_on_stdin_and_may_add_instructions(tmp_path: Path) -> None:
    command = script(tmp_path, "import json, sys, pathlib\n"
                               "data = json.load(sys.stdin)\n"
                               "pathlib.Path('seen.json').write_text(json.dumps(data))\n"
                               "print(json.dumps({'instructions': 'keep ' + data['focus']}))\n")
    decision = run_pre_compact(PAYLOAD, command=command, cwd=tmp_path, timeout=20)
    assert decision == PreCompactDecision(instructions="keep the API")
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen == {"event": "pre_compact", "trigger": "manual", "tokens": 1234, "window": 8000,
                    "message_count": 42, "focus": "the API", "strategy": "summarize", "background": False}


def test_command_may_cancel_or_supply_the_summary(tmp_path: Path) -> None:
    cancel = script(tmp_path, "print('{\"cancel\": true}')")
    assert run_pre_compact(PAYLOAD, command=cancel, cwd=tmp_path).cancel
    summary = run_pre_compact(PAYLOAD, command="echo '{\"summary\": \"all done\"}'", cwd=tmp_path)
    assert summary.summary == "all done" and not summary.cancel


def test_silent_command_changes_nothing(tmp_path: Path) -> None:
    assert run_pre_compact(PAYLOAD, command="true", cwd=tmp_path) == PreCompactDecision()


def test_failures_are_warnings_never_exceptions(tmp_path: Path) -> None:
    timed_out = run_pre_compact(PAYLOAD, command=script(tmp_path, "import time; time.sleep(30)"), cwd=tmp_path,
                                timeout=0.5)
    assert timed_out.warnings and "timed out after 0.5s" in timed_out.warnings[0]
    failed = run_pre_compact(PAYLOAD, command="echo oops >&2; exit 3", cwd=tmp_path)
    assert "exited with status 3 'oops'" in failed.warnings[0]
    garbage = run_pre_compact(PAYLOAD, command="echo not json", cwd=tmp_path)
    assert "invalid JSON" in garbage.warnings[0] and not garbage.cancel
    wrong = run_pre_compact(PAYLOAD, command="echo '[1, 2]'", cwd=tmp_path)
    assert "must answer a JSON object, got list" in wrong.warnings[0]
    missing = run_pre_compact(PAYLOAD, command="/nonexistent/hook-binary", cwd=tmp_path)
    assert "exited with status 127" in missing.warnings[0]


def test_bad_values_and_unknown_keys_are_reported() -> None:
    decision = parse_decision('{"cancel": "yes", "instructions": "x", "colour": 1}', "hook")
    assert decision.instructions == "x" and not decision.cancel
    assert any("'cancel' must be a bool" in w for w in decision.warnings)
    assert any("unknown key(s) colour" in w for w in decision.warnings)


def test_python_callback_combines_with_the_command(tmp_path: Path) -> None:
    seen: list[PreCompactInput] = []

    def callback(payload: PreCompactInput) -> dict[str, object]:
        seen.append(payload)
        return {"instructions": "from python"}

    decision = run_pre_compact(PAYLOAD, command="echo '{\"instructions\": \"from shell\"}'", callback=callback,
                               cwd=tmp_path)
    assert decision.instructions == "from shell\nfrom python"
    assert seen == [PAYLOAD]


def test_a_raising_callback_is_a_warning() -> None:
    def broken(payload: PreCompactInput) -> None:
        raise RuntimeError("bug in my hook")

    decision = run_pre_compact(PAYLOAD, callback=broken)
    assert decision.warnings == ("pre_compact callback raised RuntimeError: bug in my hook",)


def test_the_shipped_example_hook_adds_instructions_to_a_manual_compaction(tmp_path: Path) -> None:
    import sys

    from swecli.context.hooks import PreCompactInput, run_pre_compact

    script = Path(__file__).resolve().parents[2] / ".swecli.example" / "hooks" / "pre_compact.py"
    command = f"{sys.executable} {script}"
    manual = run_pre_compact(PreCompactInput("manual", 1000, 8000, 10), command=command, callback=None,
                             cwd=tmp_path, timeout=30)
    assert "public API" in manual.instructions and not manual.warnings
    auto = run_pre_compact(PreCompactInput("auto", 1000, 8000, 10), command=command, callback=None,
                           cwd=tmp_path, timeout=30)
    assert auto.instructions == "" and not auto.cancel
