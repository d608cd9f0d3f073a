"""The HTML report as a person sees it: Debian's chromium, headless, driven by Playwright.

`report_page` opens a report in a 1366 x 768 window (a common laptop screen) with a fresh profile and the flags
chromium needs in a container; `screenshots` writes what the docs show: the first screen and every figure as
the page draws it. Run as a script to refresh the committed screenshots from a built report::

    .venv/bin/python tests/reporting/browser.py build/report docs/screenshots
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

VIEWPORT = {"width": 1366, "height": 768}
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]
INSTALL = "chromium not found: `bash .ci/install-test-tools` installs Debian's chromium"


@contextmanager
def report_page(index: Path, viewport: dict[str, int] = VIEWPORT) -> Iterator[Any]:
    """A Playwright page with the report's index.html loaded (every image decoded)."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        raise RuntimeError(INSTALL)
    with tempfile.TemporaryDirectory(prefix="profile-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(profile, executable_path=chromium, headless=True,
                                                        args=CHROMIUM_FLAGS, viewport=viewport)
        try:
            page = context.new_page()
            page.goto(index.resolve().as_uri(), wait_until="load")
            yield page
        finally:
            context.close()


def box(page: Any, selector: str) -> dict[str, float]:
    """The element's box in page pixels (x, y, width, height, bottom, right) as laid out, or a KeyError."""
    found = page.evaluate(
        "s => { const e = document.querySelector(s); if (!e) return null; const r = e.getBoundingClientRect();"
        " return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height,"
        " bottom: r.bottom + scrollY, right: r.right + scrollX}; }", selector)
    if found is None:
        raise KeyError(f"no element {selector!r} on the page")
    return found


def images(page: Any) -> list[dict[str, Any]]:
    """Every <img>: its source, whether it loaded, its natural width and the width the page draws it at."""
    return page.evaluate(
        "() => Array.from(document.images).map(i => ({src: i.getAttribute('src'), complete: i.complete,"
        " natural: i.naturalWidth, shown: i.getBoundingClientRect().width}))")


def screenshots(report_dir: Path, out_dir: Path) -> list[Path]:
    """first-screen.png (the 1366 x 768 window) and figure-<name>.png per figure as the page draws it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "first-screen.png"]
    with report_page(report_dir / "index.html") as page:
        page.screenshot(path=str(written[0]))
        for figure in page.query_selector_all("figure"):
            name = Path(figure.query_selector("img").get_attribute("src")).stem
            written.append(out_dir / f"figure-{name}.png")
            figure.screenshot(path=str(written[-1]))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    for path in screenshots(args.report_dir, args.out_dir):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
