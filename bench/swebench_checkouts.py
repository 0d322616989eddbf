"""Checkouts of the SWE-bench Lite dev instances (../shared/swebench-lite-dev.json) for the retrieval benchmark.

    python bench/swebench_checkouts.py [--dest /tmp/swebench]

Needs the repositories as bare git directories under /work/.mirror (sympy/sympy, pytest-dev/pytest,
sphinx-doc/sphinx; or --mirrors DIR with one `owner+name/repo` per repository). Each instance's base commit
is extracted with `git archive` into DEST/<instance_id>, then its repository map is warmed, as a session
that opened in that checkout would have it. Files that are byte-identical across commits (same git blob)
are parsed once for all checkouts: that only saves time here, the index written is the one the app writes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swecli.repomap.discover import project_files
from swecli.repomap.index import CACHE_DIR, Index, _stat_all, save_index, write_json
from swecli.repomap.languages import language_for
from swecli.repomap.lexical import CACHE_VERSION, MAX_READ, Lexical, content_terms, with_names
from swecli.repomap.parse import Facts, parse_file
from swecli.repomap.repomap import RepoMap


def data_file() -> Path:
    """../shared/swebench-lite-dev.json from the repository root (or from a directory above a worktree)."""
    for base in Path(__file__).resolve().parents[1:]:
        candidate = base / "shared" / "swebench-lite-dev.json"
        if candidate.is_file():
            return candidate
    raise SystemExit("cannot find shared/swebench-lite-dev.json beside the repository")


def instances() -> list[dict[str, str]]:
    data: list[dict[str, str]] = json.loads(data_file().read_text())["instances"]
    return data


def mirror(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def extract(dest: Path, mirrors: Path, inst: dict[str, str]) -> Path:
    out = dest / inst["instance_id"]
    if out.is_dir():
        return out
    tmp = out.with_suffix(".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    archive = subprocess.Popen(["git", "-C", str(mirror(mirrors, inst["repo"])), "archive", inst["base_commit"]],
                               stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout, stderr=subprocess.DEVNULL, check=False)
    archive.wait()
    tmp.rename(out)
    return out


def blobs(mirrors: Path, inst: dict[str, str]) -> dict[str, str]:
    listing = subprocess.run(["git", "-C", str(mirror(mirrors, inst["repo"])), "ls-tree", "-r", "-z",
                              inst["base_commit"]], capture_output=True, check=True).stdout
    out: dict[str, str] = {}
    for record in listing.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            out[path.decode()] = meta.split()[2].decode()
    return out


def _parse(job: tuple[str, str]) -> tuple[str, Facts]:
    root, rel = job
    return rel, parse_file(Path(root), rel)


def _terms(job: tuple[str, str]) -> dict[str, int]:
    root, rel = job
    return content_terms((Path(root) / rel).read_bytes()[:MAX_READ])


def warm_terms(plan: list[tuple[dict[str, str], Path, list[str], dict[str, str]]]) -> None:
    """The BM25 term cache (terms.json) of every checkout, each distinct blob read once."""
    jobs: dict[str, tuple[str, str]] = {}
    maps = {}
    for inst, root, _, shas in plan:
        rmap = RepoMap.build(root)
        maps[inst["instance_id"]] = rmap
        for rel in rmap.index.facts:
            if rel in shas:
                jobs.setdefault(shas[rel], (str(root), rel))
    print(f"{len(jobs):,} distinct source blobs to count terms in", flush=True)
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        counts = dict(zip(jobs, pool.map(_terms, jobs.values(), chunksize=32), strict=True))
    for inst, root, _, shas in plan:
        rmap = maps[inst["instance_id"]]
        rows = {}
        for rel in rmap.index.facts:
            stat = rmap.index.stats[rel]
            base = counts[shas[rel]] if rel in shas else {}
            rows[rel] = [stat.mtime_ns, stat.size, with_names(base, rel, [s.name for s in rmap.symbols(rel)])]
        write_json(root / CACHE_DIR / "terms.json", {"version": CACHE_VERSION, "files": rows})
        Lexical.build(rmap)
        print(f"{inst['instance_id']}: BM25 index built", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dest", type=Path, default=Path("/tmp/swebench"))
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--terms-only", action="store_true", help="maps are warm: build the BM25 indexes")
    args = parser.parse_args()
    plan = []
    for inst in instances():
        root = extract(args.dest, args.mirrors, inst)
        files = project_files(root)
        shas = blobs(args.mirrors, inst)
        plan.append((inst, root, files, shas))
    if args.terms_only:
        warm_terms(plan)
        return
    memo: dict[str, Facts] = {}
    jobs: dict[str, tuple[str, str]] = {}
    for _, root, files, shas in plan:
        for rel in files:
            if language_for(rel) and rel in shas and shas[rel] not in jobs:
                jobs[shas[rel]] = (str(root), rel)
    print(f"{len(plan)} checkouts, {len(jobs):,} distinct source blobs to parse", flush=True)
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        for sha, (_, facts) in zip(jobs, pool.map(_parse, jobs.values(), chunksize=32), strict=True):
            memo[sha] = facts
    for inst, root, files, shas in plan:
        stats = _stat_all(root, [rel for rel in files if language_for(rel)])
        facts = {rel: memo[shas[rel]] for rel in stats if language_for(rel) and rel in shas}
        save_index(Index(root, files, stats, facts))
        rmap = RepoMap.build(root)
        print(f"{inst['instance_id']}: {rmap.summary()}", flush=True)
    warm_terms(plan)


if __name__ == "__main__":
    main()
