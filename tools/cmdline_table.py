#!/usr/bin/env python3
"""Prints vireo's command-line tables from the key registrations in the
sources (include/vireo/config.h, kernel/cmdline.h), the way the kernel's
`params` shell command prints them at run time: the image's keys (the tree's
and those of the apps every image carries, the Makefile's IMAGE_APPS), then
each other app's (apps/NAME/: its VIREO_CONFIG_* and CMDLINE_PARAM keys,
there in an image built with that app).

  tools/cmdline_table.py               both Markdown tables for the docs
  tools/cmdline_table.py --plain       the image's `params` lines, exactly
                                       (--with-app apps/site: the default
                                       image's; --no-tls --no-storage: make
                                       TLS=0's)
  tools/cmdline_table.py --check FILE  exit 1 unless FILE holds both tables

Only the fields a registration spells out are read: .key, .type, .def,
.values, .help (C string literals, adjacent ones joined), .min, .max (decimal
or hex literals) and .choices (the name of a NULL-terminated array of string
literals in the same file), or a VIREO_CONFIG_UINT/BOOL/STR's arguments in
their order. Values are described from the type as cmdline_describe_values()
does when .values is not given.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("lib", "boot", "kernel", "drivers", "debug", "net", "storage", "runtime")
# The Makefile's STORAGE_PATHS: linked only into images built with STORAGE=1.
STORAGE_PREFIXES = ("drivers/virtio/blk/", "storage/", "runtime/store_api.c", "runtime/acme_state.c",
                    "runtime/keep_rec.c", "runtime/acme_ari.c")
# Compiled empty without make TLS=1 (#ifdef VIREO_TLS around the whole file),
# or registering their keys only under VIREO_TLS.
TLS_PREFIXES = ("runtime/acme.c", "runtime/http/hsgate.c")
STRING = r'"(?:[^"\\]|\\.)*"'


def c_strings(text):
    """Joins adjacent C string literals (escapes kept simple: \\" and \\\\)."""
    parts = re.findall(STRING, text)
    return "".join(p[1:-1].replace('\\"', '"').replace("\\\\", "\\") for p in parts)


def registrations(text):
    """(macro, argument text) of each CMDLINE_PARAM(...) or VIREO_CONFIG_*(...)
    at the start of a line of a C file."""
    for m in re.finditer(r"^\s*(CMDLINE_PARAM|VIREO_CONFIG_UINT|VIREO_CONFIG_BOOL|VIREO_CONFIG_STR)\(", text, re.M):
        depth, i = 1, m.end()
        while depth and i < len(text):
            c = text[i]
            if c == '"':
                i = re.compile(STRING).match(text, i).end()
                continue
            depth += {"(": 1, ")": -1}.get(c, 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


def split_args(args):
    """A macro's arguments, split at top-level commas (strings kept whole)."""
    out, depth, cur, i = [], 0, "", 0
    while i < len(args):
        c = args[i]
        if c == '"':
            j = re.compile(STRING).match(args, i).end()
            cur += args[i:j]
            i = j
            continue
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            depth += {"(": 1, ")": -1}.get(c, 0)
            cur += c
        i += 1
    out.append(cur.strip())
    return out


def config_fields(macro, args):
    """A VIREO_CONFIG_*'s arguments as the CMDLINE_PARAM fields it makes
    (include/vireo/config.h)."""
    a = split_args(args)
    if macro == "VIREO_CONFIG_UINT":
        return {"key": a[1], "type": "CMDLINE_UINT", "def": '"%s"' % a[2], "min": a[3], "max": a[4], "help": a[5]}
    if macro == "VIREO_CONFIG_BOOL":
        return {"key": a[1], "type": "CMDLINE_BOOL", "def": '"%s"' % a[2], "help": a[3]}
    return {"key": a[1], "type": "CMDLINE_STR", "dst_size": a[2], "def": a[3], "help": a[4]}


def fields(args):
    """.name = value pairs of a designated initialiser list."""
    out = {}
    for m in re.finditer(r"\.(\w+)\s*=\s*((?:%s\s*)+|[^,]+)" % STRING, args):
        out[m.group(1)] = m.group(2).strip()
    return out


def number(text):
    text = text.strip().rstrip("uUlL")
    return int(text, 0)


def constant(expr, path):
    """An integer constant expression of literals and the #defines of the
    files beside path (a buffer's size: DNS_NSID_MAX + 1)."""
    defines = {}
    d = os.path.dirname(os.path.join(ROOT, path))
    for name in sorted(os.listdir(d)):
        if name.endswith((".c", ".h")):
            with open(os.path.join(d, name)) as fh:
                for m in re.finditer(r"^#define\s+(\w+)\s+([^/\n]+)", fh.read(), re.M):
                    defines[m.group(1)] = m.group(2).strip()
    for _ in range(8):
        expr = re.sub(r"\b([A-Za-z_]\w*)\b", lambda m: "(%s)" % defines.get(m.group(1), m.group(1)), expr)
    expr = re.sub(r"\b(0x[0-9a-fA-F]+|\d+)[uUlL]*\b", r"\1", expr)
    if not re.fullmatch(r"[\s\d()+\-*/xXa-fA-F]*", expr):
        sys.exit(f"{path}: cannot read the size {expr}")
    return int(eval(expr.replace("/", "//")))  # noqa: S307 (digits and operators only)


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
    if kind == "CMDLINE_STR" and "dst_size" in f:
        return f"text, at most {constant(f['dst_size'], path) - 1} characters"
    sys.exit(f"{path}: key {c_strings(f.get('key', ''))}: give .values for type {kind or '?'}")


def image_apps():
    """The Makefile's IMAGE_APPS: the apps every image carries."""
    with open(os.path.join(ROOT, "Makefile")) as fh:
        m = re.search(r"^IMAGE_APPS\s*:?=\s*(.*)$", fh.read(), re.M)
    return m.group(1).split() if m else []


def other_apps():
    apps = sorted(os.path.join("apps", d) for d in os.listdir(os.path.join(ROOT, "apps"))
                  if os.path.isdir(os.path.join(ROOT, "apps", d)))
    return [a for a in apps if a not in image_apps()]


def collect(dirs):
    params = {}
    for d in dirs:
        for dirpath, dirs_, files in os.walk(os.path.join(ROOT, d)):
            dirs_[:] = [x for x in dirs_ if x != "tests"]
            for name in sorted(files):
                if not name.endswith(".c"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path) as fh:
                    text = fh.read()
                rel = os.path.relpath(path, ROOT)
                for macro, args in registrations(text):
                    f = fields(args) if macro == "CMDLINE_PARAM" else config_fields(macro, args)
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


def cell(text):
    """A table cell's text: a '|' in it would end the cell."""
    return text.replace("|", "\\|")


def markdown(params):
    lines = ["| key | values | default | meaning |", "| --- | --- | --- | --- |"]
    for p in params:
        values = f"`{p['md']}`" if p["enum"] else cell(p["md"])
        lines.append(f"| `{p['key']}` | {values} | {cell(p['def'])} | {cell(p['help'])} |")
    return "\n".join(lines) + "\n"


def markdown_apps():
    """One table of every other app's keys, by app."""
    lines = ["| app | key | values | default | meaning |", "| --- | --- | --- | --- | --- |"]
    for app in other_apps():
        for p in collect([app]):
            values = f"`{p['md']}`" if p["enum"] else cell(p["md"])
            lines.append(f"| `{app}` | `{p['key']}` | {values} | {cell(p['def'])} | {cell(p['help'])} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plain", action="store_true", help="the lines the shell's `params` prints")
    ap.add_argument("--check", metavar="FILE", help="fail unless FILE contains the Markdown table")
    ap.add_argument("--no-storage", action="store_true",
                    help="leave out the keys of the block path (STORAGE_PREFIXES), which only an image "
                         "built with STORAGE=1 carries (the default image does; make TLS=0 and most apps do not)")
    ap.add_argument("--no-tls", action="store_true",
                    help="leave out the keys only a make TLS=1 image carries (TLS_PREFIXES)")
    ap.add_argument("--with-app", metavar="DIR", action="append", default=[],
                    help="add an app's keys (the image's APP, e.g. apps/site for the default image)")
    args = ap.parse_args()
    params = collect(list(SOURCE_DIRS) + image_apps() + [a for a in args.with_app if a not in image_apps()])
    if args.no_storage:
        params = [p for p in params if not p["file"].startswith(STORAGE_PREFIXES)]
    if args.no_tls:
        params = [p for p in params if not p["file"].startswith(TLS_PREFIXES)]
    if args.check:
        with open(args.check) as fh:
            text = fh.read()
        for what, table in (("command-line", markdown(params)), ("apps' key", markdown_apps())):
            if table not in text:
                sys.exit(f"{args.check}: its {what} table differs from the sources; "
                         "paste the output of tools/cmdline_table.py (make params)")
        return
    if args.plain:
        sys.stdout.write(plain(params))
    else:
        sys.stdout.write(markdown(params) + "\n" + markdown_apps())


if __name__ == "__main__":
    main()
