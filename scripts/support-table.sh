#!/bin/bash
# The README's support table, made from docs/results/support.tsv (which
# `make test-kernels` writes from what each kernel did):
#   scripts/support-table.sh render   rewrite the README between its markers
#   scripts/support-table.sh check    fail if the README differs (ctest)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
TSV=$TOP/docs/results/support.tsv
README=$TOP/README.md

python3 - "$1" "$TSV" "$README" <<'PY'
import re, sys
mode, tsv, readme = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(tsv) if l.strip()]
head, body = rows[0], rows[1:]
def short(rel):  # 6.1.0-57-amd64 -> 6.1 (6.1.0-57-amd64)
    m = re.match(r"(\d+\.\d+)\.(\d+)", rel)
    return f"{m.group(1)}" if m else rel
def cell(v):
    v = v.replace("|", "\\|")
    if v == "yes":
        return "yes"
    return v
lines = ["| feature | " + " | ".join(short(r) for r in head[1:]) + " |",
         "|---|" + "---|" * (len(head) - 1)]
for r in body:
    lines.append("| " + r[0] + " | " + " | ".join(cell(v) for v in r[1:]) + " |")
lines.append("")
lines.append("Kernels: " + ", ".join(f"{short(r)} is Debian's `{r}`" for r in head[1:]) + ".")
table = "\n".join(lines) + "\n"
begin, end = "<!-- support-table: begin (scripts/support-table.sh) -->\n", "<!-- support-table: end -->\n"
text = open(readme).read()
if begin not in text or end not in text:
    sys.exit(f"support-table: {readme} has no {begin.strip()} ... {end.strip()} markers")
pre, rest = text.split(begin, 1)
cur, post = rest.split(end, 1)
if mode == "check":
    if cur != table:
        sys.exit("support-table: the README's table differs from docs/results/support.tsv: run scripts/support-table.sh render")
    print("support-table: the README matches docs/results/support.tsv")
elif mode == "render":
    open(readme, "w").write(pre + begin + table + end + post)
else:
    sys.exit("usage: support-table.sh render|check")
PY
