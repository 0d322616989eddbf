"""Big command outputs through the bash tool and the offload layer: nothing lost, memory bounded.

    python bench/output_bench.py

Each case runs in a fresh interpreter: the real bash tool (default cap, 30,000 characters) runs the
command, the real context mechanisms save the whole output and build the model's preview. The table
shows the output's size, what was saved (it must be byte-identical to the command's output), what the
model sees, the wall time, and the interpreter's peak memory (max RSS), which must not grow with the
output (outputs past 1 MiB are spooled to a temporary file, never held in memory). An output under
4 MiB is tokenized for the preview's header, which loads the o200k vocabulary (most of the small case's
memory); a bigger one's token count is estimated from its size.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

CASES = [
    ("seq 1 40000", 40_000),
    ("seq 1 3000000", 3_000_000),
    ("seq 1 30000000", 30_000_000),
]

CHILD = r"""
import hashlib, json, resource, subprocess, sys, time
from pathlib import Path
from swecli.config import ContextConfig
from swecli.context.engineering import Mechanisms
from swecli.context.tokens import TokenCounter
from swecli.messages import ToolCall
from swecli.tools.base import ToolContext
from swecli.tools.bash import BASH

root, command = Path(sys.argv[1]), sys.argv[2]
call = ToolCall(id="bench", name="bash", arguments=json.dumps({"command": command}))
start = time.perf_counter()
result = BASH.fn(BASH.parse(call.arguments), ToolContext(root=root))
seen = Mechanisms(ContextConfig(), TokenCounter("o200k_base"), root).tool_content(call, result)
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # before the checks below read the file
saved = root / seen.split("full text: `", 1)[1].split("`", 1)[0]
expected = hashlib.sha256(subprocess.run(["bash", "-c", command], capture_output=True).stdout).hexdigest()
digest = hashlib.file_digest(saved.open("rb"), "sha256").hexdigest()
print(json.dumps({"output_bytes": result.meta["output_bytes"], "saved_bytes": saved.stat().st_size,
                  "identical": digest == expected, "lines": sum(1 for _ in saved.open("rb")),
                  "model_chars": len(seen), "seconds": elapsed,
                  "max_rss_mb": peak}))
"""


def main() -> None:
    print("| command | output | saved (identical) | lines saved | model sees | time | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for command, lines in CASES:
        with tempfile.TemporaryDirectory() as root:
            out = subprocess.run([sys.executable, "-c", CHILD, root, command], capture_output=True, text=True,
                                 check=True)
        row = json.loads(out.stdout)
        assert row["lines"] == lines, row
        print(f"| `{command}` | {row['output_bytes'] / 1e6:.1f} MB | {row['saved_bytes'] / 1e6:.1f} MB "
              f"({'yes' if row['identical'] else 'NO'}) | {row['lines']:,} | {row['model_chars']:,} chars | "
              f"{row['seconds']:.1f} s | {row['max_rss_mb']:.0f} MB |")


if __name__ == "__main__":
    main()
