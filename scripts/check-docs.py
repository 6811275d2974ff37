#!/usr/bin/env python3
"""Checks the Markdown documentation's links, anchors and tables of contents (python3's standard library only).

  python3 scripts/check-docs.py             report what is broken and exit 1 (scripts/format.sh --check runs it)
  python3 scripts/check-docs.py --fix-toc   rewrite each docs page's table of contents from its headings

Checked: README.md, ARCHITECTURE.md, CONTRIBUTING.md and every docs/*.md. A relative link must name a file or folder
of the repository; a #anchor must be a heading of its target, slugged as GitHub does; each docs/*.md starts with a
"# " title and lists every ## and ### heading, in order, in a table of contents before its first ## heading.
"""

import os
import re
import sys
import unicodedata
from urllib.parse import unquote

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP_PAGES = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"\]\(\s*<?([^()\s<>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
TOC_ITEM = re.compile(r"^(\s*)[-*]\s+\[(.*)\]\(#([^)]*)\)\s*$")


def pages():
    """The Markdown files this check covers, as paths relative to the repository's root."""
    found = [page for page in TOP_PAGES if os.path.isfile(os.path.join(ROOT, page))]
    docs = os.path.join(ROOT, "docs")
    for folder, subfolders, files in os.walk(docs):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                found.append(os.path.relpath(os.path.join(folder, name), ROOT))
    return found


def prose_lines(lines):
    """Yields (line number, line) for the lines outside fenced code blocks."""
    fence = None
    for number, line in enumerate(lines, 1):
        match = FENCE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading: its rendered text lower-cased, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("**", "").strip().lower()
    kept = []
    for character in text:
        if character == " ":
            kept.append("-")
        elif character == "-" or unicodedata.category(character)[0] in "LMN" or unicodedata.category(character) == "Pc":
            kept.append(character)
    return "".join(kept)


def headings(lines):
    """(line number, level, text, anchor) of every heading, anchors made unique as GitHub does (-1, -2, …)."""
    seen = {}
    result = []
    for number, line in prose_lines(lines):
        match = HEADING.match(line)
        if not match:
            continue
        text = match.group(2)
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.append((number, len(match.group(1)), text, base if count == 0 else f"{base}-{count}"))
    return result


def links(lines):
    """(line number, target) of every inline link, image and reference definition outside code."""
    for number, line in prose_lines(lines):
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)
            continue
        for match in INLINE_LINK.finditer(CODE_SPAN.sub("", line)):
            yield number, match.group(1)


def read(path):
    """The file's lines."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return handle.read().split("\n")


def toc_block(lines):
    """(first index, end index, items) of the list before the first ## heading; items are (indent, text, anchor)."""
    start = end = None
    items = []
    for number, line in prose_lines(lines):
        heading = HEADING.match(line)
        if heading and len(heading.group(1)) >= 2:
            break
        match = TOC_ITEM.match(line)
        if match:
            if start is None:
                start = number - 1
            end = number
            items.append((len(match.group(1)), match.group(2), match.group(3)))
        elif start is not None and line.strip():
            break
    return start, end, items


def expected_toc(lines):
    """The table of contents a page's ## and ### headings call for, one Markdown list line each."""
    return [
        ("  " if level == 3 else "") + f"- [{text}](#{anchor})"
        for _, level, text, anchor in headings(lines)
        if level in (2, 3)
    ]


def check_toc(path, lines, problems):
    """A docs page has a title and a table of contents that lists its ## and ### headings in order."""
    if not lines or not lines[0].startswith("# "):
        problems.append(f"{path}:1: a docs page starts with its '# ' title")
    wanted = [anchor for _, level, _, anchor in headings(lines) if level in (2, 3)]
    start, _, items = toc_block(lines)
    listed = [anchor for _, _, anchor in items]
    if wanted and start is None:
        problems.append(f"{path}:1: no table of contents before the first ## heading (scripts/check-docs.py --fix-toc)")
    elif listed != wanted:
        missing = [anchor for anchor in wanted if anchor not in listed]
        extra = [anchor for anchor in listed if anchor not in wanted]
        detail = "; ".join(
            part
            for part in (
                f"missing #{', #'.join(missing)}" if missing else "",
                f"not a heading #{', #'.join(extra)}" if extra else "",
                "out of order" if not missing and not extra else "",
            )
            if part
        )
        problems.append(
            f"{path}:{start + 1}: the table of contents does not list the headings: {detail}"
            " (scripts/check-docs.py --fix-toc)"
        )


def fix_toc(path):
    """Rewrites a docs page's table of contents from its headings (inserted after the title's paragraph if none)."""
    lines = read(path)
    toc = expected_toc(lines)
    start, end, _ = toc_block(lines)
    if start is None:
        index = 1
        while index < len(lines) and not lines[index].strip():
            index += 1
        while index < len(lines) and lines[index].strip():
            index += 1
        lines[index:index] = [""] + toc
    else:
        lines[start:end] = toc
    with open(os.path.join(ROOT, path), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))


def main(arguments):
    """Checks every page (or, with --fix-toc, rewrites the docs pages' tables of contents first)."""
    if arguments not in ([], ["--fix-toc"]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    covered = pages()
    if arguments == ["--fix-toc"]:
        for path in covered:
            if path.startswith("docs" + os.sep):
                fix_toc(path)
    problems = []
    anchors = {}
    checked = 0

    def anchors_of(path):
        if path not in anchors:
            anchors[path] = {anchor for _, _, _, anchor in headings(read(path))}
        return anchors[path]

    for path in covered:
        lines = read(path)
        if path.startswith("docs" + os.sep):
            check_toc(path, lines, problems)
        for number, target in links(lines):
            if not target or SCHEME.match(target):
                continue
            checked += 1
            place, _, anchor = target.partition("#")
            place = unquote(place)
            if place:
                base = ROOT if place.startswith("/") else os.path.dirname(os.path.join(ROOT, path))
                resolved = os.path.normpath(os.path.join(base, place.lstrip("/")))
                if not (resolved == ROOT or resolved.startswith(ROOT + os.sep)) or not os.path.exists(resolved):
                    problems.append(f"{path}:{number}: the link to {target} names no file of the repository")
                    continue
                target_page = os.path.relpath(resolved, ROOT)
            else:
                target_page = path
            if anchor and target_page.endswith(".md") and os.path.isfile(os.path.join(ROOT, target_page)):
                if unquote(anchor) not in anchors_of(target_page):
                    problems.append(f"{path}:{number}: {target_page} has no heading for #{anchor}")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"docs: {len(problems)} broken (above); fix the link or the heading it names", file=sys.stderr)
        return 1
    print(f"docs: {len(covered)} pages, {checked} relative links and anchors, all resolve", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
