"""Just-in-time retrieval measured on real bug reports (SWE-bench Lite dev: sympy, pytest, sphinx).

    python bench/swebench_checkouts.py            # once: checkouts at each base commit, maps warmed
    python bench/retrieval_bench.py [--dest /tmp/swebench] [--budget 4000] [--verbose]

For each instance the problem statement goes through `retrieve()` exactly as a session runs it
(assembly.py): the repository map and its BM25 index come from the background builds a session starts
when it opens (warm here, as after a first session), the o200k tokenizer counts, the time limit is 2 s.
Scored against the files the merged fix edited (`gold_files`):

- precision: attached files that are gold / attached files (pooled over instances);
- hit: instances with a gold file attached; listed: ... attached or in the ranked list below the bar;
- empty: instances where nothing was attached; tokens: mean tokens attached.

The baseline is BM25 alone at the same budget: the same bm25s index (paths, definitions, contents), its
top files attached as ~600-token excerpts until the budget is spent (6 files at 4,000 tokens).

Instances are split for tuning: every third instance by sorted id is held out (`held-out` rows); the
weights in retrieval.py were tuned on the other two thirds only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.swebench_checkouts import instances
from swecli.context.tokens import Tokenizer
from swecli.repomap.lexical import lexical_background, terms
from swecli.repomap.repomap import background
from swecli.retrieval.retrieval import retrieve

BASELINE_EXCERPT_TOKENS = 600


@dataclass
class Score:
    attached: int = 0
    correct: int = 0
    hits: int = 0
    listed_hits: int = 0
    empty: int = 0
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    timeouts: int = 0
    n: int = 0

    def add(self, attached: list[str], listed: list[str], gold: set[str], tokens: int, seconds: float,
            timed_out: bool) -> None:
        self.n += 1
        self.attached += len(attached)
        self.correct += sum(1 for p in attached if p in gold)
        self.hits += any(p in gold for p in attached)
        self.listed_hits += any(p in gold for p in [*attached, *listed])
        self.empty += not attached
        self.tokens.append(tokens)
        self.seconds.append(seconds)
        self.timeouts += timed_out

    def row(self, label: str, with_listed: bool = True) -> str:
        precision = self.correct / self.attached if self.attached else 0.0
        listed = f"{self.listed_hits / self.n:.2f}" if with_listed else "-"
        return (f"| {label} | {self.n} | {precision:.2f} | {self.hits / self.n:.2f} | {listed} | "
                f"{self.empty} of {self.n} | {statistics.mean(self.tokens):,.0f} | "
                f"{statistics.median(self.seconds):.2f} s / {max(self.seconds):.2f} s | {self.timeouts} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dest", type=Path, default=Path("/tmp/swebench"))
    parser.add_argument("--budget", type=int, default=4_000)
    parser.add_argument("--time-limit", type=float, default=2.0)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--only", default="", help="instance ids containing this text")
    parser.add_argument("--dump", type=Path, help="write each instance's ranking (JSON lines) here")
    args = parser.parse_args()
    count = Tokenizer("o200k_base")
    assert count.exact  # loaded now, as a session's accounting has it before the first request
    ordered = sorted(instances(), key=lambda i: i["instance_id"])
    ours = {"tuning": Score(), "held-out": Score(), "all": Score()}
    bm25 = {"tuning": Score(), "held-out": Score(), "all": Score()}
    for position, inst in enumerate(ordered):
        if args.only not in inst["instance_id"]:
            continue
        root = args.dest / inst["instance_id"]
        split = "held-out" if position % 3 == 2 else "tuning"
        gold = set(inst["gold_files"])
        lexical = lexical_background(root).wait()  # the session's background builds, finished (warm)
        assert background(root).wait() is not None and lexical is not None, root
        start = time.perf_counter()
        found = retrieve(inst["problem_statement"], root, budget_tokens=args.budget, count_tokens=count,
                         time_limit=args.time_limit)
        seconds = time.perf_counter() - start
        attached = [a.path for a in found.attachments if a.kind == "excerpt"]
        listed = [p for p, _ in found.listed]
        for key in (split, "all"):
            ours[key].add(attached, listed, gold, found.tokens, seconds, found.timed_out)
        k = max(1, args.budget // BASELINE_EXCERPT_TOKENS)
        scores = lexical.scores(terms(inst["problem_statement"]))
        top = [p for p, _ in sorted(scores.items(), key=lambda kv: -kv[1])[:k]]
        for key in (split, "all"):
            bm25[key].add(top, [], gold, BASELINE_EXCERPT_TOKENS * len(top), 0.0, False)
        if args.dump:
            with args.dump.open("a") as out:
                out.write(json.dumps({"id": inst["instance_id"], "split": split, "gold": sorted(gold),
                                      "ranking": found.ranking, "attached": attached,
                                      "seconds": round(seconds, 2), "notes": found.notes}) + "\n")
        if args.verbose:
            mark = "HIT " if any(p in gold for p in attached) else ("list" if any(p in gold for p in listed)
                                                                     else "miss")
            print(f"{mark} {inst['instance_id']} [{split}] gold={sorted(gold)} attached={attached} "
                  f"listed={listed[:4]} {seconds:.2f}s", flush=True)
            for rel, score, why in found.ranking[:5]:
                print(f"     {'*' if rel in gold else ' '} {score:5.2f} {rel}: {why[:110]}", flush=True)
    print(f"budget {args.budget:,} tokens, time limit {args.time_limit:g} s, o200k_base")
    print("| method | instances | precision | hit | listed | attaches nothing | tokens | time (median / max) "
          "| timeouts |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in ("tuning", "held-out", "all"):
        if ours[key].n:
            print(ours[key].row(f"swecli ({key})"))
    for key in ("tuning", "held-out", "all"):
        if bm25[key].n:
            print(bm25[key].row(f"BM25 alone ({key})", with_listed=False))


if __name__ == "__main__":
    main()
