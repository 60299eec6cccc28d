#!/usr/bin/env python3
"""typedefs.py: the typedef names of mcc's C and CUDA sources, for pgindent.

    scripts/typedefs.py              rewrites typedefs.list at the top
    scripts/typedefs.py --check      exits 1 (and says which) if typedefs.list
                                     is not what the sources give

pgindent formats a declaration correctly only when it knows which names are
types; PostgreSQL's own list (src/tools/pgindent/typedefs.list of a source
tree) has the server's, this one has mcc's. docs/contributing.md says how to
run pgindent with both.

Found: `typedef ... Name;` in every .c, .h and .cu file git tracks under
src/, kernels/ and test/ (struct, union and enum bodies, plain aliases and
function-pointer types), one name a line, sorted, no duplicates.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "typedefs.list")

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# a typedef up to its semicolon, braces balanced (see typedef_names)
START = re.compile(r"\btypedef\b")
FUNC_PTR = re.compile(r"\(\s*\*\s*(\w+)\s*\)\s*\(")
TRAILING_NAME = re.compile(r"(\w+)\s*(\[[^\]]*\]\s*)*$")


def sources():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "src", "kernels", "test"],
                         check=True, capture_output=True, text=True).stdout
    return [f for f in out.split() if f.endswith((".c", ".h", ".cu"))]


def typedef_names(text):
    """Names declared by each typedef of a C text without comments."""
    names = []
    for m in START.finditer(text):
        depth = 0
        i = m.end()
        while i < len(text):
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == ";" and depth == 0:
                break
            i += 1
        decl = text[m.end():i]
        # the declarators after the last closing brace (or the whole alias)
        tail = decl[decl.rfind("}") + 1:] if "}" in decl else decl
        fp = FUNC_PTR.search(tail)
        if fp:
            names.append(fp.group(1))
            continue
        for part in tail.split(","):
            t = TRAILING_NAME.search(part.strip().lstrip("*").strip())
            if t:
                names.append(t.group(1))
    return names


def collect():
    found = set()
    for f in sources():
        with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
            found.update(typedef_names(COMMENT.sub(" ", fh.read())))
    return "".join(n + "\n" for n in sorted(found))


def main():
    want = collect()
    if sys.argv[1:] == ["--check"]:
        have = open(OUT).read() if os.path.exists(OUT) else ""
        if have != want:
            print("typedefs.list is out of date: run scripts/typedefs.py")
            return 1
        return 0
    if sys.argv[1:]:
        print(__doc__.strip().split("\n\n")[1])
        return 2
    with open(OUT, "w") as fh:
        fh.write(want)
    print("typedefs.list: %d names" % want.count("\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
