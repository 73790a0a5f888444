"""``python -m fabricfit_dev.docsgen [--check] [--no-helm]``: write (or check) the generated
reference pages."""

from __future__ import annotations

import argparse
import sys

from fabricfit_dev.docsgen.pages import NEEDS_HELM, PAGES, ROOT, stale


def main() -> int:
    parser = argparse.ArgumentParser(prog="docsgen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is stale")
    parser.add_argument("--no-helm", action="store_true", help="skip the pages helm renders")
    args = parser.parse_args()
    paths = [p for p in PAGES if not (args.no_helm and p in NEEDS_HELM)]
    if args.check:
        old = stale(paths)
        for path in old:
            print(f"{path} is stale: run `make docs-ref`", file=sys.stderr)
        return 1 if old else 0
    for path in paths:
        target = ROOT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(PAGES[path](), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
