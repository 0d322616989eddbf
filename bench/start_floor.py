"""The floor under `swecli -p`'s start: the three libraries the guide names for its layers doing the least
the same path needs, and nothing of swecli. typer parses the same options, pydantic validates a settings
model, httpx (imported on a thread with its CLI blocked, as `swecli.entry` and `llm.transport` do) sends one
chat request over plain http without a certificate store (as swecli's client does for such a server).
Run by `start_instructions.py` under `start_probe.py`, which ends it at that connect."""

from __future__ import annotations

import ssl
import sys
import threading
from typing import Any

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
import typer  # noqa: E402

app = typer.Typer(add_completion=False)


@app.callback(invoke_without_command=True)
def main(  # noqa: PLR0913 (swecli's options, one parameter each)
    prompt: str = typer.Option(None, "-p"), output_format: str = typer.Option("text", "--output-format"),
    provider: str = typer.Option(None, "--provider"), model: str = typer.Option(None, "--model"),
    base_url: str = typer.Option(None, "--base-url"), mode: str = typer.Option(None, "--mode"),
    sandbox: str = typer.Option(None, "--sandbox"), max_iterations: int = typer.Option(None, "--max-iterations"),
    context_limit: int = typer.Option(None, "--context-limit"), thinking: str = typer.Option(None, "--thinking"),
    continue_: bool = typer.Option(False, "--continue"), resume: str = typer.Option(None, "--resume"),
    trust_project: bool = typer.Option(False, "--trust-project"),
) -> None:
    imported: dict[str, Any] = {}
    http = threading.Thread(target=lambda: imported.setdefault("httpx", __import__("httpx")))
    http.start()
    from pydantic import BaseModel

    class Settings(BaseModel):
        provider: str = ""
        model: str = ""
        base_url: str = ""
        max_tokens: int = 8192

    settings = Settings.model_validate({"provider": provider, "model": model, "base_url": base_url})
    http.join()
    with imported["httpx"].Client(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)) as client:
        client.post(settings.base_url + "/chat/completions",
                    json={"model": settings.model, "stream": True, "messages": [{"role": "user", "content": prompt}]})


if __name__ == "__main__":
    app()
