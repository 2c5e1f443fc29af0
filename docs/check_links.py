#!/usr/bin/env python3
"""Checks the documentation's references to files of the repository: every relative Markdown
link in a .md file of the checkout must name a file or folder that exists. With --paths, also
every path of the repository written in backticks (`src/...`, `docs/...`, `tests/...`,
`benches/...`, `examples/...`) in a .md file or a Rust doc comment (`//!`, `///`): a pattern
(`*`, `{`), another project's path (after "tokio" or "rayon" on the line) and an example or
test named without `.rs` are understood. Prints what does not resolve and exits 1 if anything
does not. Usage: python3 docs/check_links.py [--paths] [CHECKOUT]"""
import os
import re
import subprocess
import sys

args = sys.argv[1:]
paths = "--paths" in args
args = [a for a in args if a != "--paths"]
root = args[0] if args else "."
files = subprocess.run(
    ["git", "ls-files", "-co", "--exclude-standard"], cwd=root, capture_output=True, text=True
).stdout.split()
link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
tick = re.compile(r"`((?:src|docs|tests|benches|examples)/[^`\s]*)`")
bad = []
for f in files:
    if f.startswith("target/") or not (f.endswith(".md") or f.endswith(".rs")):
        continue
    text = open(os.path.join(root, f), encoding="utf-8").read()
    if f.endswith(".rs"):
        text = "\n".join(
            line.split("//", 1)[1] for line in text.splitlines() if re.match(r"\s*//[!/]", line)
        )
    else:
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for m in link.finditer(text):
            target = m.group(1).split("#")[0]
            if not target or re.match(r"^[a-z]+:", target):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(root, os.path.dirname(f), target))):
                bad.append(f"{f}: link {m.group(1)}")
    for m in tick.finditer(text) if paths else []:
        path = m.group(1).rstrip(".,:;").split("::")[0]
        before = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
        if any(c in path for c in "*{<") or "tokio" in before or "rayon" in before:
            continue
        if not any(os.path.exists(os.path.join(root, p)) for p in (path, path + ".rs")):
            bad.append(f"{f}: path `{path}`")
for b in bad:
    print(b)
print(f"{len(bad)} unresolved")
sys.exit(1 if bad else 0)
