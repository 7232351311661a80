#!/usr/bin/env python3
"""The layering check (make check-layers, part of make test-host): every
#include in the tree points down the stack, docs/architecture.md's rule.

    apps/      may include include/ and its own folder only
    include/   include/ only (the app API: sealed)
    include/vireo/X.h   by the layer that implements it and those above:
               the toolkit's (types, string, byteorder, parse, outbuf,
               siphash, list) by lib/ and up, config.h (the key registration) by
               kernel/ and up, the rest by runtime/ (and apps)
    runtime/   net/, storage/ and below
    net/ storage/ debug/   drivers/, boot/ and below, not each other
    drivers/ boot/         kernel/ and lib/, not each other
    kernel/    lib/
    lib/       lib/ only

A folder may include its own files (runtime/http/ -> runtime/ too); the
composition root, kernel/main.c, may include every layer but apps/. The
linker-set macro, include/vireo/linkset.h, is the one header every layer may
include (the app API's registrations and the kernel's are one mechanism); it
includes nothing. Inside
drivers/, the virtio bus, core and ring (drivers/virtio/*.c|h) do not know
an IOMMU by name (drivers/iommu/). lwIP's and mbedTLS's headers are net/'s
(code above net/ may use them). An include that is neither the tree's nor a
known library's is an error too. And tests mirror the tree: the host test
of F/x.c is tests/host/F/test_x.c, its fuzzer tests/fuzz/F/fuzz_x.c.

Today's known violations are ALLOWED below, each with the issue item that
removes it; an allowed line that no longer violates is an error as well
(so the list only shrinks). Exit status 1 on any error, each printed as
file:line: the include: the rule. --self-test proves the check fails on a
violation (make check-layers runs it first).
"""
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Rank of each top-level folder; a file may include a lower rank or its own
# folder. Folders sharing a rank are peers: neither includes the other.
RANK = {"lib": 0, "kernel": 1, "boot": 2, "drivers": 2, "debug": 3, "net": 3, "storage": 3, "runtime": 4}
ROOTS = {"kernel/main.c"}  # the composition root
# Below everything, includable from every layer, including nothing itself.
SHARED = {"include/vireo/linkset.h"}
# Libraries vireo builds (fetched, never committed) and the layer they sit in.
LIBRARY = {"lwip": "net", "netif": "net", "arch": "net", "mbedtls": "net", "psa": "net"}
# Headers the build generates into build/gen/ (-I) and the one file that
# includes each: tools/mkmime.py's Content-Type table.
GENERATED = {"mime_table.h": "runtime/http/mime.c"}
# <...> headers: the compiler's, kernel/arch/ (-Ikernel/arch), GNU-EFI
# (boot/ only), and the small libc net/port/include and net/tls/include give
# lwIP and mbedTLS.
ANGLE = {"arch.h": "kernel", "efi.h": "boot"}
ANGLE_FREE = {"stdarg.h", "stddef.h", "stdint.h", "stdbool.h", "limits.h"}
LIBC = {"string.h", "stdio.h", "stdlib.h", "assert.h", "inttypes.h", "limits.h"}
SOURCE_DIRS = ("lib", "kernel", "boot", "drivers", "debug", "net", "storage", "runtime", "include", "apps")

# The layer that implements each header of the app API (include/vireo/),
# for the rule above; a header not named here is the runtime's.
API_IMPL = {"types.h": "lib", "string.h": "lib", "byteorder.h": "lib", "parse.h": "lib", "outbuf.h": "lib",
            "siphash.h": "lib", "list.h": "lib", "config.h": "kernel"}

# Known violations: (file, included path) -> the issue item that removes it.
ALLOWED = {
    # None: issue 28 items 2 (the sealed app API) and 3 (the registry at the
    # bottom, the DMA seam) removed the last ones. A new entry names the
    # issue item that removes it.
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def top(path):
    return path.split("/", 1)[0]


def folder(path):
    return os.path.dirname(path)


def violation(src, inc, angle, exists):
    """Why src including inc breaks the rule, or None."""
    s = top(src)
    if angle:
        if inc in ANGLE_FREE:
            return None
        if inc in ANGLE:
            layer = ANGLE[inc]
            if layer == "boot" and s != "boot":
                return "<efi.h> is boot/'s alone: nothing else calls firmware"
            target = layer
        elif inc in LIBC:
            if src.startswith(("net/port/", "net/tls/")):
                return None
            return f"<{inc}>: the C library is lib/'s (lib/string.h), not the host's"
        else:
            return f"<{inc}>: not a header vireo builds against"
        return rank_violation(src, target)
    first = inc.split("/", 1)[0]
    if inc in GENERATED:
        return None if GENERATED[inc] == src else f'"{inc}": generated for {GENERATED[inc]} alone'
    if not exists(inc):
        if first in LIBRARY:
            return rank_violation(src, LIBRARY[first])
        return f'"{inc}": not a file of the tree nor of a library vireo builds'
    # Inside the tree.
    if src in SHARED:
        return "a header every layer includes includes nothing"
    if inc in SHARED:
        return None
    if s == "include":
        return None if top(inc) == "include" else "include/ includes include/ only (the app API is sealed)"
    if s == "apps":
        app = "/".join(src.split("/")[:2])
        if top(inc) == "include" or inc.startswith(app + "/"):
            return None
        return "an app includes include/ and its own folder only"
    if top(inc) == "apps":
        return "nothing below apps/ includes an app"
    if src in ROOTS:
        return None
    if src.startswith("drivers/virtio/") and folder(src) == "drivers/virtio" and inc.startswith("drivers/iommu/"):
        return "the virtio bus, core and ring know no IOMMU by name"
    if top(inc) == "include":
        impl = API_IMPL.get(os.path.basename(inc), "runtime") if inc.startswith("include/vireo/") else "runtime"
        if RANK.get(s, 9) < RANK[impl]:
            return f"{inc} is {impl}/'s side of the app API: {s}/ is below it"
        return None
    return rank_violation(src, top(inc))


def rank_violation(src, target):
    s = top(src)
    if target == s:
        return None
    if target not in RANK or s not in RANK:
        return f"{target}/ is not a layer"
    if RANK[target] < RANK[s]:
        return None
    if RANK[target] == RANK[s]:
        return f"{s}/ and {target}/ are peers: neither includes the other"
    return f"{s}/ includes {target}/, which is above it (the stack: apps > runtime > net, storage, debug > drivers, boot > kernel > lib)"


def sources(root):
    for d in SOURCE_DIRS:
        for dirpath, dirs, files in os.walk(os.path.join(root, d)):
            rel = os.path.relpath(dirpath, root)
            # An app's tests are tests; the fetched libraries' stand-ins
            # (net/port/include, net/tls/include) are libc.
            dirs[:] = [x for x in dirs if x != "tests"]
            if rel in ("net/port/include", "net/tls/include"):
                continue
            for f in sorted(files):
                if f.endswith((".c", ".h", ".S")):
                    yield os.path.join(rel, f)


def check_tests(root, out=sys.stdout):
    """Tests mirror the tree: tests/host/F/test_x.c (tests/fuzz/F/fuzz_x.c)
    tests F/x.c (or F/x.h, or the folder F/x/ as a whole)."""
    errors = 0
    for kind, prefix in (("host", "test_"), ("fuzz", "fuzz_")):
        base = os.path.join(root, "tests", kind)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if not (f.startswith(prefix) and f.endswith(".c")):
                    continue
                folder_rel = os.path.relpath(dirpath, base)
                name = f[len(prefix):-2]
                stem = os.path.join(root, folder_rel, name)
                if not (os.path.isfile(stem + ".c") or os.path.isfile(stem + ".h") or os.path.isdir(stem)):
                    print(f"tests/{kind}/{folder_rel}/{f}: no {folder_rel}/{name}.c: the test of F/x.c is "
                          f"tests/{kind}/F/{prefix}x.c (docs/testing.md)", file=out)
                    errors += 1
    return errors


def check(root, allowed, out=sys.stdout):
    def exists(p):
        return os.path.isfile(os.path.join(root, p))

    errors = 0
    used = set()
    for src in sources(root):
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                angle, inc = m.group(1) == "<", m.group(2)
                if not angle and not exists(inc):  # -Iinclude, or beside the file
                    if exists(os.path.join("include", inc)):
                        inc = os.path.join("include", inc)
                    elif exists(os.path.join(folder(src), inc)):
                        inc = os.path.normpath(os.path.join(folder(src), inc))
                why = violation(src, inc, angle, exists)
                if why is None:
                    continue
                if (src, inc) in allowed:
                    used.add((src, inc))
                    continue
                print(f"{src}:{n}: #include {m.group(1)}{m.group(2)}{'>' if angle else chr(34)}: {why}", file=out)
                errors += 1
    for key in sorted(set(allowed) - used):
        if os.path.isfile(os.path.join(root, key[0])):
            print(f"tools/layers.py: {key[0]} no longer includes {key[1]} against the rule: "
                  f"drop it from ALLOWED (issue {allowed[key]})", file=out)
            errors += 1
    return errors


def self_test():
    """A tree with one file per rule broken (and one allowed line): each must
    be reported, and nothing else."""
    cases = {
        "lib/a.c": '#include "kernel/loop.h"\n',  # lib includes kernel
        "kernel/loop.h": "",
        "kernel/b.c": '#include "drivers/pci/pci.h"\n',  # up the stack
        "drivers/pci/pci.h": "",
        "drivers/c.c": '#include "boot/x.h"\n',  # peers
        "boot/x.h": "",
        "drivers/virtio/core.c": '#include "drivers/iommu/vtd.h"\n',
        "drivers/iommu/vtd.h": "",
        "net/d.c": '#include "runtime/api.h"\n#include "lwip/tcp.h"\n',
        "runtime/api.h": '#include "net/ok.h"\n#include "lwip/tcp.h"\n#include "include/vireo/app.h"\n',
        "net/ok.h": "",
        "include/vireo/app.h": '#include "kernel/loop.h"\n',
        "include/vireo/types.h": "",
        "include/vireo/config.h": "",
        "lib/t.h": '#include "include/vireo/types.h"\n#include "include/vireo/app.h"\n',  # the toolkit's only
        "kernel/u.c": '#include "include/vireo/config.h"\n',  # kernel/ implements the keys
        "apps/x/x.c": '#include "include/vireo/app.h"\n#include "apps/x/x.h"\n#include "runtime/api.h"\n'
                      '#include "apps/y/y.h"\n',
        "apps/x/x.h": "",
        "apps/y/y.h": "",
        "kernel/main.c": '#include "runtime/api.h"\n',  # the root may
        "drivers/e.c": '#include <efi.h>\n#include "lwip/pbuf.h"\n#include "nowhere.h"\n',
        "net/f.c": '#include "debug/g.h"\n',
        "debug/g.h": '#include "drivers/pci/pci.h"\n',
        "kernel/h.c": '#include "runtime/api.h"\n',  # allowed below
        "lib/i.h": '#include "include/vireo/linkset.h"\n',  # every layer may
        "include/vireo/linkset.h": '#include "include/vireo/app.h"\n',  # ... and it includes nothing
        "tests/host/kernel/test_loop.c": "",  # mirrors kernel/loop.h
        "tests/host/kernel/test_nothing.c": "",  # mirrors nothing
    }
    expect = {"lib/a.c:1", "kernel/b.c:1", "drivers/c.c:1", "drivers/virtio/core.c:1", "net/d.c:1",
              "include/vireo/app.h:1", "apps/x/x.c:3", "apps/x/x.c:4", "drivers/e.c:1", "drivers/e.c:2",
              "drivers/e.c:3", "net/f.c:1", "lib/t.h:2", "include/vireo/linkset.h:1",
              "tests/host/kernel/test_nothing.c"}
    with tempfile.TemporaryDirectory() as d:
        for p, text in cases.items():
            os.makedirs(os.path.join(d, os.path.dirname(p)), exist_ok=True)
            with open(os.path.join(d, p), "w") as f:
                f.write(text)

        class Out:
            lines = []

            def write(self, s):
                self.lines.append(s)

        out = Out()
        errors = check(d, {("kernel/h.c", "runtime/api.h"): "test", ("lib/gone.c", "x.h"): "test"}, out)
        errors += check_tests(d, out)
        got = {line.split(": ")[0] for line in "".join(out.lines).splitlines()}
        if got != expect or errors != len(expect):
            print("tools/layers.py --self-test: expected violations at", sorted(expect), file=sys.stderr)
            print("got:", "".join(out.lines), file=sys.stderr)
            return 1
        # An allowed line that stops violating must be reported.
        with open(os.path.join(d, "kernel/h.c"), "w") as f:
            f.write('#include "lib/x.h"\n')
        out.lines = []
        check(d, {("kernel/h.c", "runtime/api.h"): "test"}, out)
        if "no longer includes" not in "".join(out.lines):
            print("tools/layers.py --self-test: a stale allowance went unreported", file=sys.stderr)
            return 1
    print(f"layers: self-test: {len(expect)} planted violations found, a stale allowance reported")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    errors = check(ROOT, ALLOWED) + check_tests(ROOT)
    if errors:
        print(f"layers: {errors} problem(s) with the layering or the tests' layout (docs/architecture.md, "
              "docs/testing.md)", file=sys.stderr)
        return 1
    print(f"layers: every #include points down the stack ({len(ALLOWED)} known exceptions); "
          "every host test and fuzzer mirrors its source")
    return 0


if __name__ == "__main__":
    sys.exit(main())
