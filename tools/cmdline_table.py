#!/usr/bin/env python3
"""Prints vireo's command-line table from the CMDLINE_PARAM registrations in
the sources (kernel/cmdline.h), the way the kernel's `params` shell command
prints it at run time.

  tools/cmdline_table.py               the Markdown table for the docs
  tools/cmdline_table.py --plain       `params`' lines, exactly
  tools/cmdline_table.py --check FILE  exit 1 unless FILE holds the table

Only the fields a registration spells out are read: .key, .type, .def,
.values, .help (C string literals, adjacent ones joined), .min, .max (decimal
or hex literals) and .choices (the name of a NULL-terminated array of string
literals in the same file). Values are described from the type as
cmdline_describe_values() does when .values is not given.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("lib", "boot", "kernel", "drivers", "debug", "net", "storage", "runtime")
# The Makefile's STORAGE_PATHS: linked only into images built with STORAGE=1.
STORAGE_PREFIXES = ("drivers/virtio/blk/", "storage/", "runtime/store_api.c")
STRING = r'"(?:[^"\\]|\\.)*"'


def c_strings(text):
    """Joins adjacent C string literals (escapes kept simple: \\" and \\\\)."""
    parts = re.findall(STRING, text)
    return "".join(p[1:-1].replace('\\"', '"').replace("\\\\", "\\") for p in parts)


def registrations(text):
    """The argument text of each CMDLINE_PARAM(...) in a C file."""
    for m in re.finditer(r"^\s*CMDLINE_PARAM\(", text, re.M):
        depth, i = 1, m.end()
        while depth and i < len(text):
            c = text[i]
            if c == '"':
                i = re.compile(STRING).match(text, i).end()
                continue
            depth += {"(": 1, ")": -1}.get(c, 0)
            i += 1
        yield text[m.end():i - 1]


def fields(args):
    """.name = value pairs of a designated initialiser list."""
    out = {}
    for m in re.finditer(r"\.(\w+)\s*=\s*((?:%s\s*)+|[^,]+)" % STRING, args):
        out[m.group(1)] = m.group(2).strip()
    return out


def number(text):
    text = text.strip().rstrip("uUlL")
    return int(text, 0)


def choices(text, name, path):
    m = re.search(r"\b%s\s*\[\s*\]\s*=\s*\{(.*?)\}" % re.escape(name), text, re.S)
    if not m:
        sys.exit(f"{path}: choices array {name} not found")
    return [s[1:-1] for s in re.findall(STRING, m.group(1))]


def describe(f, text, path, sep):
    if "values" in f:
        return c_strings(f["values"])
    kind = f.get("type", "")
    if kind == "CMDLINE_BOOL":
        return "bool"
    if kind == "CMDLINE_UINT":
        lo = number(f.get("min", "0"))
        hi = number(f.get("max", "0"))
        return f"{lo}-{hi}" if hi else f"at least {lo}"
    if kind == "CMDLINE_HEX":
        return "hex number"
    if kind == "CMDLINE_ENUM":
        return sep.join(choices(text, f["choices"], path))
    sys.exit(f"{path}: key {c_strings(f.get('key', ''))}: give .values for type {kind or '?'}")


def collect():
    params = {}
    for d in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for name in sorted(files):
                if not name.endswith(".c"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path) as fh:
                    text = fh.read()
                rel = os.path.relpath(path, ROOT)
                for args in registrations(text):
                    f = fields(args)
                    key = c_strings(f.get("key", ""))
                    if not key or "help" not in f:
                        sys.exit(f"{rel}: a CMDLINE_PARAM without .key or .help")
                    if key in params:
                        sys.exit(f"{rel}: key {key} is registered twice (also in {params[key]['file']})")
                    params[key] = {
                        "file": rel,
                        "plain": describe(f, text, rel, ", "),
                        "md": describe(f, text, rel, "`, `"),
                        "enum": f.get("type") == "CMDLINE_ENUM" and "values" not in f,
                        "def": c_strings(f["def"]) if "def" in f else "none",
                        "help": c_strings(f["help"]),
                    }
    return [dict(key=k, **params[k]) for k in sorted(params)]


def plain(params):
    return "".join(f"  {p['key']}={p['plain']} (default {p['def']}): {p['help']}\n" for p in params)


def markdown(params):
    lines = ["| key | values | default | meaning |", "| --- | --- | --- | --- |"]
    for p in params:
        values = f"`{p['md']}`" if p["enum"] else p["md"]
        lines.append(f"| `{p['key']}` | {values} | {p['def']} | {p['help']} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plain", action="store_true", help="the lines the shell's `params` prints")
    ap.add_argument("--check", metavar="FILE", help="fail unless FILE contains the Markdown table")
    ap.add_argument("--no-storage", action="store_true",
                    help="leave out the keys of the block path (STORAGE_PREFIXES), which only an image "
                         "built with STORAGE=1 carries (the default image does not)")
    args = ap.parse_args()
    params = collect()
    if args.no_storage:
        params = [p for p in params if not p["file"].startswith(STORAGE_PREFIXES)]
    if args.check:
        with open(args.check) as fh:
            if markdown(params) not in fh.read():
                sys.exit(f"{args.check}: its command-line table differs from the sources; "
                         "paste the output of tools/cmdline_table.py")
        return
    sys.stdout.write(plain(params) if args.plain else markdown(params))


if __name__ == "__main__":
    main()
