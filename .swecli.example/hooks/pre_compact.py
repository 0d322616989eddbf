#!/usr/bin/env python3
"""Example PreCompact hook. Enable it in .swecli/config.toml:

    [hooks]
    pre_compact = "python3 .swecli/hooks/pre_compact.py"

swecli runs it once for every compaction with JSON on stdin:
    {"event": "pre_compact", "trigger": "auto|manual|overflow", "tokens": 98000, "window": 128000,
     "message_count": 212, "focus": "", "strategy": "summarize", "background": true}
("background": true when the summary is being made ahead, on another thread, while the loop goes on.)
and reads an optional JSON answer on stdout:
    {"cancel": true}                 skip this compaction (ignored on overflow: the request cannot fit)
    {"instructions": "..."}          extra instructions for the summary
    {"summary": "..."}               use this text as the summary (no model call)
"""

import json
import sys

event = json.load(sys.stdin)
if event["trigger"] == "manual" and not event["focus"]:
    # Every hand-triggered compaction keeps the API design decisions, whatever else it drops.
    print(json.dumps({"instructions": "Keep every decision about the public API, with its reason."}))
