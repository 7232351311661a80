#!/usr/bin/env python3
"""Checks the documentation's relative links: each must name a file or
directory in the tree, and a #fragment into a Markdown file must be one of
its headings (GitHub's anchor rules: lower case, punctuation dropped, spaces
to hyphens, -1, -2... for repeats). Links to other sites are not followed.

Usage: check_docs.py [ROOT]   (ROOT: the repository, default: two levels up)
Exit status 1 and one line per broken link when any is broken.
"""
import os
import re
import sys

# Inline links and images: [text](target) or [text](target "title").
LINK = re.compile(r'!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')


def doc_files(root):
    files = [os.path.join(root, 'README.md'), os.path.join(root, 'net', 'README.md')]
    docs = os.path.join(root, 'docs')
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))
    return [f for f in files if os.path.isfile(f)]


def lines_outside_code(path):
    """The file's lines with fenced code blocks left out, numbered from 1."""
    fenced = False
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield n, line


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', s)  # a link in a heading: its text
    s = re.sub(r'[^\w\- ]', '', s)  # drop punctuation (backquotes, dots, colons...)
    return s.replace(' ', '-')


def anchors(path):
    seen = {}
    out = set()
    for _, line in lines_outside_code(path):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        k = seen.get(base, 0)
        seen[base] = k + 1
        out.add(base if k == 0 else '%s-%d' % (base, k))
    return out


def check(root):
    errors = []
    cache = {}
    for doc in doc_files(root):
        rel_doc = os.path.relpath(doc, root)
        for n, line in lines_outside_code(doc):
            # Inline code spans are not links.
            for target in LINK.findall(re.sub(r'`[^`]*`', '', line)):
                if re.match(r'^[a-z][a-z0-9+.-]*:', target):
                    continue  # http:, https:, mailto:
                path, _, frag = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
                where = '%s:%d: %s' % (rel_doc, n, target)
                if os.path.relpath(dest, root).split(os.sep)[0] == '..':
                    errors.append(where + ': outside the repository')
                    continue
                if not os.path.exists(dest):
                    errors.append(where + ': no such file')
                    continue
                if frag and dest.endswith('.md'):
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if frag not in cache[dest]:
                        errors.append(where + ': no heading with that anchor')
    return errors


def selftest():
    """The checker itself must catch a missing file and a missing anchor."""
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        os.mkdir(os.path.join(t, 'docs'))
        with open(os.path.join(t, 'README.md'), 'w') as f:
            f.write('# Top\n\n[ok](docs/a.md#the-a-file-notes) [ok](#top) [web](https://example.org/x)\n'
                    '[gone](docs/missing.md) [bad anchor](docs/a.md#nope) `[code](not/a/link)`\n'
                    '```\n[fenced](not/a/link)\n```\n')
        with open(os.path.join(t, 'docs', 'a.md'), 'w') as f:
            f.write('# The `a` file: notes\n\n[up](../README.md) [out](../../x.md)\n')
        errors = check(t)
    want = ['README.md:4: docs/missing.md: no such file',
            'README.md:4: docs/a.md#nope: no heading with that anchor',
            'docs/a.md:3: ../../x.md: outside the repository']
    if sorted(errors) != sorted(want):
        print('check-docs: self-test failed: %r' % errors)
        return False
    return True


def main():
    if not selftest():
        return 2
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
    root = os.path.abspath(root)
    docs = doc_files(root)
    errors = check(root)
    for e in errors:
        print('check-docs: ' + e)
    print('check-docs: %d files, %s' % (len(docs), '%d broken links' % len(errors) if errors else 'every link resolves'))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
