#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/*.md resolves.

A link is `[text](target)` in Markdown. Links with a scheme (https:, mailto:) and pure anchors
are skipped; a relative target must name a file or directory of the repository (its #anchor, if
any, must match a heading of that Markdown file). Prints each broken link as FILE:LINE: problem
and exits 1 if there is one.
"""
import pathlib
import re
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def anchors(md: pathlib.Path) -> set:
    """GitHub's anchor for each heading: lower case, punctuation dropped, spaces as hyphens."""
    out = set()
    in_code = False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        title = re.sub(r"[^\w\- ]", "", title)
        out.add(title.replace(" ", "-"))
    return out


def check(repo: pathlib.Path) -> list:
    problems = []
    files = [repo / "README.md"] + sorted((repo / "docs").rglob("*.md"))
    for md in files:
        in_code = False
        for n, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                path, _, anchor = target.partition("#")
                resolved = (md.parent / path).resolve()
                where = f"{md.relative_to(repo)}:{n}"
                if not resolved.exists():
                    problems.append(f"{where}: link to {target}: no such file")
                elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                    problems.append(f"{where}: link to {target}: no heading #{anchor} in {path}")
    return problems


def main() -> int:
    repo = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = check(repo)
    for p in problems:
        print(p)
    print(f"checked the links of README.md and docs/: {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
