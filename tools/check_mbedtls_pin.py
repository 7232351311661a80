#!/usr/bin/env python3
"""check_mbedtls_pin.py [ROOT] [--self-test]: the mbedTLS pin, its patches and
docs/https.md's advisory table agree (part of make check-docs):

- the pin table (suite, version, .dsc SHA256) is net/tls/fetch-mbedtls.sh's;
- the patch table lists exactly the files in net/tls/patches/;
- every advisory row says now, later or never; a row fixed after the pinned
  upstream version that applies (now or later) names a patch from that list
  whose header names the row's CVE, or says "unpatched" (and why, in the
  row); a row fixed at or before the pin names no patch file;
- a "never" row's Needs (macros and functions) are absent: no macro is
  defined in net/tls/mbedtls_config.h and no function is called in vireo's
  C sources outside build/.

--self-test runs the check on altered copies (another version, hash or
suite; a patch file added or removed; a "never" macro defined; a backport
without its CVE) and fails unless each is caught. Under a second.
"""
import os
import re
import shutil
import sys
import tempfile

SECTION = "## mbedTLS version and advisories"


def version_key(v):
    return tuple(int(x) for x in re.findall(r"\d+", v))


def rows(lines, first_header):
    """The rows (lists of cells) of the first markdown table whose header's
    first cell is first_header."""
    out, on = [], False
    for ln in lines:
        if not ln.startswith("|"):
            if on:
                break
            continue
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if not on:
            if cells[0] == first_header:
                on, header = True, cells
            continue
        if set(ln.replace("|", "").strip()) <= set("-: "):
            continue
        out.append(dict(zip(header, cells)))
    return out


def c_sources(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in ("build", ".git")]
        for f in files:
            if f.endswith((".c", ".h")) and not f.startswith("mbedtls_config"):
                yield os.path.join(d, f)


def check(root):
    errs = []
    fetch = open(os.path.join(root, "net/tls/fetch-mbedtls.sh")).read()
    pin = {k: (re.search(rf"^{k}=(\S+)$", fetch, re.M) or [None, None])[1]
           for k in ("DEB_SUITE", "DEB_VERSION", "DEB_DSC_SHA256")}
    doc = open(os.path.join(root, "docs/https.md")).read()
    if SECTION not in doc:
        return [f"docs/https.md has no '{SECTION}' section"]
    sec = doc.split(SECTION, 1)[1].split("\n## ", 1)[0].splitlines()

    table = {r["Pin"]: r[""].strip("`") for r in rows(sec, "Pin")}
    for key, name in (("DEB_SUITE", "suite"), ("DEB_VERSION", "version"), ("DEB_DSC_SHA256", ".dsc SHA256")):
        if table.get(name) != pin[key]:
            errs.append(f"pin: net/tls/fetch-mbedtls.sh has {key}={pin[key]}, docs/https.md's table {name} {table.get(name)}")
    upstream = (pin["DEB_VERSION"] or "0").split("-")[0]

    pdir = os.path.join(root, "net/tls/patches")
    files = sorted(f for f in os.listdir(pdir) if f.endswith(".patch"))
    listed = sorted(r["Patch"].strip("`") for r in rows(sec, "Patch"))
    for f in sorted(set(files) - set(listed)):
        errs.append(f"patch {f} is in net/tls/patches/ but not in docs/https.md's patch table")
    for f in sorted(set(listed) - set(files)):
        errs.append(f"patch {f} is in docs/https.md's patch table but not in net/tls/patches/")

    config = open(os.path.join(root, "net/tls/mbedtls_config.h")).read()
    defined = set(re.findall(r"^\s*#\s*define\s+(MBEDTLS_\w+)", config, re.M))
    sources = None
    advisories = rows(sec, "Advisory")
    if not advisories:
        errs.append("docs/https.md's advisory table is empty")
    for r in advisories:
        name = r["Advisory"]
        cve = (re.search(r"CVE-\d{4}-\d+", name) or [None])[0]
        applies, fixed, patch = r.get("Applies", ""), r.get("Fixed in", ""), r.get("Patch", "")
        pfile = (re.search(r"`?([\w.-]+\.patch)`?", patch) or [None, None])[1]
        if applies not in ("now", "later", "never"):
            errs.append(f"{name}: Applies is '{applies}', not now, later or never")
        after = version_key(fixed) > version_key(upstream)
        if pfile and pfile not in files:
            errs.append(f"{name}: names {pfile}, which is not in net/tls/patches/")
        if pfile and not after:
            errs.append(f"{name}: fixed in {fixed}, which the pin ({upstream}) has, yet names {pfile}")
        if after and applies in ("now", "later") and not pfile and "unpatched" not in patch:
            errs.append(f"{name}: fixed only in {fixed}, applies {applies}, and names neither a patch nor 'unpatched'")
        if pfile and pfile in files and cve:
            head = open(os.path.join(pdir, pfile)).read().split("\n--- ", 1)[0]
            if cve not in head:
                errs.append(f"{name}: {pfile}'s header does not name {cve}")
        if applies == "never":
            needs = re.findall(r"`([\w]+)`", r.get("Needs", ""))
            if not needs:
                errs.append(f"{name}: 'never' with nothing in Needs")
            for n in needs:
                if n.startswith("MBEDTLS_"):
                    if n in defined:
                        errs.append(f"{name}: 'never' needs {n}, which net/tls/mbedtls_config.h defines: re-assess")
                else:
                    if sources is None:
                        sources = {p: open(p, errors="replace").read() for p in c_sources(root)}
                    for p, text in sources.items():
                        if re.search(rf"\b{re.escape(n)}\s*\(", text):
                            errs.append(f"{name}: 'never' needs {n}(), which {os.path.relpath(p, root)} calls: re-assess")
    return errs


def self_test(root):
    """Each alteration must be caught; the unaltered tree must pass."""
    def alter(path, old, new):
        def f(t):
            p = os.path.join(t, path)
            s = open(p).read()
            assert old in s, (path, old)
            open(p, "w").write(s.replace(old, new, 1))
        return f

    fetch = open(os.path.join(root, "net/tls/fetch-mbedtls.sh")).read()
    ver = re.search(r"^DEB_VERSION=(\S+)$", fetch, re.M)[1]
    sha = re.search(r"^DEB_DSC_SHA256=(\S+)$", fetch, re.M)[1]
    suite = re.search(r"^DEB_SUITE=(\S+)$", fetch, re.M)[1]
    patches = sorted(f for f in os.listdir(os.path.join(root, "net/tls/patches")) if f.endswith(".patch"))
    backport = next(f for f in patches if re.search(r"cve-\d+-\d+", f))
    cve = "CVE-" + re.search(r"cve-(\d+-\d+)", backport)[1]

    def add_patch(t):
        open(os.path.join(t, "net/tls/patches/0099-extra.patch"), "w").write("x\n")

    def drop_patch(t):
        os.remove(os.path.join(t, "net/tls/patches", backport))

    def define_never(t):
        p = os.path.join(t, "net/tls/mbedtls_config.h")
        s = open(p).read()
        i = s.rfind("#endif")
        open(p, "w").write(s[:i] + "#define MBEDTLS_SSL_RENEGOTIATION\n" + s[i:])

    def call_never(t):
        open(os.path.join(t, "net/tls/sni_extra.c"), "w").write(
            "void f(void *s) { mbedtls_ssl_set_hs_authmode(s, 2); }\n")

    cases = [
        ("another version", alter("net/tls/fetch-mbedtls.sh", f"DEB_VERSION={ver}", "DEB_VERSION=9.9.9-1")),
        ("another hash", alter("net/tls/fetch-mbedtls.sh", f"DEB_DSC_SHA256={sha}", "DEB_DSC_SHA256=" + "0" * 64)),
        ("another suite", alter("net/tls/fetch-mbedtls.sh", f"DEB_SUITE={suite}", "DEB_SUITE=sid")),
        ("a patch file added", add_patch),
        ("a backport removed", drop_patch),
        ("a 'never' macro defined", define_never),
        ("a 'never' function called", call_never),
        ("a backport without its CVE", alter(f"net/tls/patches/{backport}", cve, "CVE-0000-0")),
        ("an advisory without a verdict", alter("docs/https.md", "| later |", "| maybe |")),
    ]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what, change in [("nothing", None)] + cases:
            t = os.path.join(tmp, "t")
            shutil.rmtree(t, ignore_errors=True)
            os.makedirs(os.path.join(t, "net/tls"))
            os.makedirs(os.path.join(t, "docs"))
            shutil.copytree(os.path.join(root, "net/tls/patches"), os.path.join(t, "net/tls/patches"))
            for f in ("net/tls/fetch-mbedtls.sh", "net/tls/mbedtls_config.h", "docs/https.md"):
                shutil.copy(os.path.join(root, f), os.path.join(t, f))
            if change:
                change(t)
            errs = check(t)
            ok = (not errs) if change is None else bool(errs)
            print(f"  {'ok  ' if ok else 'FAIL'} {what}: {errs[0] if errs else 'passes'}")
            failures += not ok
    return failures


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = os.path.abspath(args[0] if args else os.path.join(os.path.dirname(__file__), ".."))
    if "--self-test" in sys.argv:
        n = self_test(root)
        print(f"check_mbedtls_pin self-test: {'all caught' if n == 0 else f'{n} not caught'}")
        return 1 if n else 0
    errs = check(root)
    for e in errs:
        print(f"check_mbedtls_pin: {e}", file=sys.stderr)
    if not errs:
        print("  CHECK   mbedTLS pin, patches and docs/https.md's advisory table agree")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
