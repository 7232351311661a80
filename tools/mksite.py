#!/usr/bin/env python3
"""Pack a directory into a C source file for runtime/site.h.

usage: mksite.py ROOT OUT.c [--extra NAME=SIZE ...]

Every regular file under ROOT becomes one entry of site_files[], with its URL
path, its bytes as a const (.rodata) array initialized by a string literal, its Content-Type and a quoted
ETag (the first 16 hex digits of its SHA-256). Entries are sorted by URL path
in byte order, which site_find() relies on for its binary search. site_heads[]
holds, entry for entry, the file's lines of its response head (Content-Type,
Content-Length, ETag), made here once so that serving it formats nothing. The output
depends only on file names and contents: no timestamps, no ROOT path.

Dotfiles and dot-directories are skipped. Names outside [A-Za-z0-9._~-], names
over 255 bytes, URL paths over 1024 bytes, symlinks and other non-regular
files are errors, so nothing in a path ever needs escaping.

--gzip adds, beside each compressible file (text, JSON, XML, SVG, wasm of
256 bytes or more), NAME.gz made here (gzip -9, reproducible) when it is a
tenth smaller: the runtime serves it as nginx's gzip_static does.
--brotli adds NAME.br the same way (Debian's brotli command, -q 11); the
runtime prefers it for clients taking br (ngx_brotli's brotli_static).

--extra NAME=SIZE synthesizes a file of SIZE bytes at /NAME (NAME may contain
'/'), byte i being i % 251, so large benchmark files need not live in git.
Its bytes are not in the output either: the entry's data is NULL and
site_synth_boot() (runtime/site.c) generates them at boot; its ETag is that
of the bytes generated.
"""

import argparse
import hashlib
import os
import re
import stat
import sys

import mkmime

OCTAL = ["\\%03o" % b for b in range(256)]
NAME_RE = re.compile(r"[A-Za-z0-9._~-]+")
NAME_MAX = 255
PATH_MAX = 1024

# http_content_type()'s table (runtime/http/mime.c): tools/mkmime.py makes
# both from /etc/mime.types; test_http checks they agree.
TYPES = None


def c_str(s):
    """s (printable ASCII but quote and backslash, CR, LF) as a C string literal."""
    if any(c in s for c in '"\\') or any(not (c in "\r\n" or " " <= c <= "~") for c in s):
        raise SiteError(f"cannot quote {s!r}")
    return '"' + s.replace("\r", "\\r").replace("\n", "\\n") + '"'


def head_entry(url, data, etag):
    """The file's struct site_head (runtime/site.h): its Content-Type and
    Content-Length lines, then its ETag line, as the runtime's
    http_response_head() formats them (test_http compares them)."""
    ctype = f"Content-Type: {content_type(url)}\r\n"
    head = ctype + f"Content-Length: {len(data)}\r\n"
    etag_line = f'ETag: "{etag}"\r\n'
    quoted = etag_line.replace('"', '\\"').replace("\r", "\\r").replace("\n", "\\n")
    return f'\t{{ {c_str(head)}, "{quoted}", {len(head)}, {len(ctype)}, {len(etag_line)} }},'


class SiteError(Exception):
    pass


def content_type(url):
    global TYPES
    if TYPES is None:
        TYPES = mkmime.table()
    return mkmime.content_type(TYPES, url)


def check_name(name, where):
    if len(name.encode()) > NAME_MAX:
        raise SiteError(f"{where}: name longer than {NAME_MAX} bytes")
    if not NAME_RE.fullmatch(name) or name in (".", ".."):
        raise SiteError(f"{where}: name {name!r} would need escaping")


def add(files, url, data, where):
    if len(url.encode()) > PATH_MAX:
        raise SiteError(f"{where}: URL path longer than {PATH_MAX} bytes")
    if url in files:
        raise SiteError(f"{where}: {url} given twice")
    files[url] = data


def walk(root, files):
    if not os.path.isdir(root):
        raise SiteError(f"{root}: not a directory")
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        prefix = "/" if rel == "." else "/" + rel.replace(os.sep, "/") + "/"
        kept = []
        for d in sorted(dirnames):
            if d.startswith("."):
                continue
            full = os.path.join(dirpath, d)
            if os.path.islink(full):
                raise SiteError(f"{full}: symlinks are not packed")
            check_name(d, full)
            kept.append(d)
        dirnames[:] = kept
        for f in sorted(filenames):
            if f.startswith("."):
                continue
            full = os.path.join(dirpath, f)
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode):
                raise SiteError(f"{full}: not a regular file")
            check_name(f, full)
            with open(full, "rb") as fh:
                add(files, prefix + f, fh.read(), full)


# --gzip: a file of these types, GZIP_MIN bytes or more, gets NAME.gz beside
# it (gzip -9, no name or time in its header: reproducible) when that saves
# a tenth or more; the runtime serves it to clients taking gzip (site_gz()).
GZIP_TYPES = ("text/", "application/json", "application/manifest+json", "application/xml",
              "application/wasm", "image/svg+xml")
GZIP_MIN = 256


def add_gzip(files):
    import gzip
    for url in sorted(files):
        data = files[url]
        if len(data) < GZIP_MIN or url + ".gz" in files or not content_type(url).startswith(GZIP_TYPES):
            continue
        z = gzip.compress(data, compresslevel=9, mtime=0)
        if len(z) * 10 <= len(data) * 9:
            files[url + ".gz"] = z


# --brotli: the same files get NAME.br (brotli -q 11 -w 22, Debian's brotli
# command: deterministic) under the same rule; the runtime prefers it for
# clients taking br (site_br(), ngx_brotli's brotli_static).
def add_brotli(files):
    import shutil
    import subprocess
    if not shutil.which("brotli"):
        raise SiteError("--brotli needs the brotli command (Debian's brotli; tools/deps.sh build installs it)")
    for url in sorted(files):
        data = files[url]
        if (len(data) < GZIP_MIN or url.endswith((".gz", ".br")) or url + ".br" in files or
                not content_type(url).startswith(GZIP_TYPES)):
            continue
        z = subprocess.run(["brotli", "-q", "11", "-w", "22", "-c", "-"], input=data, capture_output=True,
                           check=True).stdout
        if len(z) * 10 <= len(data) * 9:
            files[url + ".br"] = z


SYNTH = set()   # URL paths of --extra files: generated at boot, not stored


def add_extra(files, spec):
    name, sep, size = spec.partition("=")
    name = name.lstrip("/")
    if not sep or not name or not size.isdigit():
        raise SiteError(f"--extra {spec}: want NAME=SIZE")
    for part in name.split("/"):
        if part.startswith("."):
            raise SiteError(f"--extra {spec}: dot names are not served")
        check_name(part, f"--extra {spec}")
    size = int(size)
    data = bytes(i % 251 for i in range(size))
    add(files, "/" + name, data, f"--extra {spec}")
    SYNTH.add("/" + name)


def emit(files):
    urls = sorted(files, key=lambda u: u.encode())
    total = sum(len(files[u]) for u in urls)
    out = [
        "/* Generated by tools/mksite.py: do not edit. */",
        f"/* {len(urls)} files, {total} bytes. */",
        '#include "runtime/site.h"',
        "",
    ]
    for i, url in enumerate(urls):
        data = files[url]
        out.append(f"/* {url} */")
        if url in SYNTH:
            out.append(f"/* {len(data)} bytes generated at boot (site_synth_boot) */")
            out.append("")
            continue
        if not data:
            out.append(f"static const u8 site_data_{i}[1] = {{ 0 }};")
            out.append("")
            continue
        # A string literal of octal escapes, its exact length (no NUL):
        # GCC reads it many times faster than a list of integers, which
        # matters for the test and benchmark builds' 16 MiB files.
        out.append(f"static const u8 site_data_{i}[{len(data)}] __attribute__((aligned(16))) =")
        for off in range(0, len(data), 64):
            out.append('\t"' + "".join(OCTAL[b] for b in data[off:off + 64]) + '"')
        out[-1] += ";"
        out.append("")
    # Last-Modified: the build's time, as reproducible as the rest.
    try:
        mtime = max(0, int(os.environ.get("SOURCE_DATE_EPOCH", "0")))
    except ValueError:
        mtime = 0
    if urls:
        out.append("const struct site_file site_files[] = {")
        for i, url in enumerate(urls):
            data = files[url]
            etag = hashlib.sha256(data).hexdigest()[:16]
            ref = "NULL" if url in SYNTH else f"site_data_{i}"
            out.append(f'\t{{ "{url}", {ref}, {len(data)}, '
                       f'"{content_type(url)}", "\\"{etag}\\"", {mtime}ULL }},')
        out.append("};")
        out.append("const struct site_head site_heads[] = {")
        for url in urls:
            out.append(head_entry(url, files[url], hashlib.sha256(files[url]).hexdigest()[:16]))
        out.append("};")
    else:
        out.append("const struct site_file site_files[1];	/* unused: the site is empty */")
        out.append("const struct site_head site_heads[1];")
    out.append(f"const size_t site_nfiles = {len(urls)};")
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description="Pack a directory into a vireo site C file.")
    ap.add_argument("root")
    ap.add_argument("out")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=SIZE",
                    help="synthesize /NAME of SIZE bytes (byte i is i %% 251)")
    ap.add_argument("--gzip", action="store_true",
                    help="add NAME.gz beside each compressible file (nginx's gzip_static)")
    ap.add_argument("--brotli", action="store_true",
                    help="add NAME.br beside each compressible file (ngx_brotli's brotli_static)")
    args = ap.parse_args(argv)
    files = {}
    try:
        walk(args.root, files)
        if args.brotli:
            add_brotli(files)
        if args.gzip:
            add_gzip(files)
        for spec in args.extra:
            add_extra(files, spec)
    except (SiteError, OSError) as e:
        print(f"mksite: {e}", file=sys.stderr)
        return 1
    text = emit(files)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="ascii", newline="\n") as fh:
        fh.write(text)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
