#!/usr/bin/env python3
"""Where two ways of a per-GET probe differ, per GET, from the profiles probe_callgrind.sh kept.

Usage (after `KEEP=DIR tests/soak/benches/<probe>_callgrind.sh A B`):
  cg_per_get.py functions DIR A B [N]     the N functions whose own cost differs most (B - A)
  cg_per_get.py callers   DIR A B NAME    who calls the functions whose name holds NAME, and
                                          how much of their cost each call site brings (B - A)
  cg_per_get.py sites     DIR A B CALLEE CALLER
                                          calls of CALLEE (a substring: `memcpy`) from functions
                                          whose name holds CALLER, per source line, per GET, of B
                                          (and B - A when A has the same line)

Each way's profiles are its 200- and 1,200-GET runs of the client thread (`<way>.<n>.<pid>-01`):
the difference divided by 1,000 is one GET, start-up excluded.
"""
import collections
import glob
import re
import subprocess
import sys

GETS = 1000


def profile(d, way, n):
    return sorted(glob.glob(f"{d}/{way}.{n}.*-01"))[0]


def annotate(path, *args):
    return subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", *args, path],
        capture_output=True, text=True, check=True,
    ).stdout


def per_get(d, way, read):
    total = collections.Counter()
    for n, sign in ((1200, 1), (200, -1)):
        for key, cost in read(profile(d, way, n)).items():
            total[key] += sign * cost
    return {k: v / GETS for k, v in total.items()}


def functions(path):
    out = collections.Counter()
    for line in annotate(path).splitlines():
        m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*)", line)
        if m and "PROGRAM TOTALS" not in line:
            out[re.sub(r" \[.*\]$", "", m.group(2))] += int(m.group(1).replace(",", ""))
    return out


def callers_of(name):
    def read(path):
        out = collections.Counter()
        block = []
        for line in annotate(path, "--tree=caller").splitlines():
            if not line.strip():
                block = []
            elif "*  " in line and name in line:
                for caller in block:
                    m = re.match(r"\s*([\d,]+) \([^)]*\)\s+<\s+(.*?)(?: \(\d+x\))?(?: \[.*\])?$", caller)
                    if m:
                        out[m.group(2)] += int(m.group(1).replace(",", ""))
                block = []
            else:
                block.append(line)
        return out
    return read


def sites_of(callee, caller):
    """Calls counted per (file, line, calling function), read from the raw profile."""
    def read(path):
        names, files = {}, {}
        function = file = sub_file = called = None
        line_now = 0
        out = collections.Counter()

        def position(token):
            nonlocal line_now
            if token != "*":
                line_now = line_now + int(token) if token[0] in "+-" else int(token)
            return line_now

        with open(path) as f:
            for text in f:
                text = text.rstrip("\n")
                m = re.match(r"^(c?)(fl|fi|fe|fn|ob)=\((\d+)\)(?: (.*))?$", text)
                if m:
                    is_call, kind, key, name = m.groups()
                    table = names if kind == "fn" else files
                    if name:
                        table[(kind == "fn", key)] = name
                    value = table.get((kind == "fn", key))
                    if is_call:
                        if kind == "fn":
                            called = value
                    elif kind == "fl":
                        file = sub_file = value
                    elif kind in ("fi", "fe"):
                        sub_file = value
                    elif kind == "fn":
                        function, sub_file = value, file
                    continue
                if text.startswith("calls="):
                    count = int(text.split()[0][len("calls="):])
                    at = position(next(f).split()[0])
                    if called and callee in called and function and caller in function:
                        out[((sub_file or "?").split("/")[-1], at, function[:80])] += count
                    called = None
                elif text and (text[0].isdigit() or text[0] in "+-*"):
                    position(text.split()[0])
        return out
    return read


def show(rows, limit, floor):
    print(f"total {sum(r[0] for r in rows):.0f}")
    for delta, key in rows[:limit]:
        if abs(delta) >= floor:
            print(f"{delta:8.0f}  {str(key)[-170:]}")


def main():
    command, d, a, b, *rest = sys.argv[1:]
    if command == "functions":
        read, limit, floor = functions, int(rest[0]) if rest else 40, 15
    elif command == "callers":
        read, limit, floor = callers_of(rest[0]), 40, 10
    elif command == "sites":
        read, limit, floor = sites_of(rest[0], rest[1]), 60, 0.5
    else:
        sys.exit(__doc__)
    before, after = per_get(d, a, read), per_get(d, b, read)
    if command == "sites":
        # Calls per GET of B; a site A has too shows what B adds there.
        rows = sorted(((v, k) for k, v in after.items() if v), key=lambda r: r[1])
        for count, key in rows:
            extra = f" ({count - before.get(key, 0):+.1f} over {a})" if key in before else ""
            print(f"{count:6.1f} per GET  {key}{extra}")
        return
    rows = sorted(((after.get(k, 0) - before.get(k, 0), k) for k in set(before) | set(after)),
                  key=lambda r: -abs(r[0]))
    show(rows, limit, floor)


if __name__ == "__main__":
    main()
