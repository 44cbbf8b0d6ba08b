"""A minimal DOM from HTML (standard library only), and headless Chromium to get one."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from rt4chart.pipeline.report.packing import unpacked

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync")


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    parent: Element | None = None
    children: list[Element | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Element):
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str):
        for el in self.iter():
            if tag and el.tag != tag:
                continue
            if cls and cls not in el.classes:
                continue
            if all(el.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                yield el

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Element:
        found = next(self.find_all(tag, cls, **attrs), None)
        assert found is not None, f"no <{tag} class={cls} {attrs}>"
        return found

    def by_id(self, id_: str) -> Element:
        return self.find(id=id_)


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        el = Element(tag, {k: v or "" for k, v in attrs}, self.cur)
        self.cur.children.append(el)
        if tag not in VOID:
            self.cur = el

    def handle_endtag(self, tag):
        node = self.cur
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.cur = node.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(html: str) -> Element:
    """The DOM of `html` as a browser shows it: packed trace views in place (the browser's
    own unpacking is what the Chromium tests check, with `browser_dom`)."""
    builder = _Builder()
    builder.feed(unpacked(html))
    builder.close()
    return builder.root


def browser_dom(page: Path) -> Element:
    """The DOM headless Chromium holds once the page's script has run: parsed as it is (no
    packed trace view may be left for `parse` to unpack)."""
    dump = run_chromium(page, "--dump-dom", "--virtual-time-budget=5000")
    assert 'class="packed"' not in dump, "the page's script left trace views packed"
    builder = _Builder()
    builder.feed(dump)
    builder.close()
    return builder.root


def chromium() -> str | None:
    return shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def run_chromium(page: Path, *args: str, timeout: float = 90) -> str:
    """Chromium, headless and offline-minded, with an empty profile; its stdout.

    It runs in its own process group, which is killed (only it) if it outlives `timeout`.
    """
    binary = chromium()
    assert binary, "the report's browser test needs Debian's chromium (.ci/run installs it)"
    with tempfile.TemporaryDirectory(prefix="rt4chart-chromium-") as profile:
        cmd = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args,
               page.resolve().as_uri()]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        assert proc.returncode == 0, err[-2000:]
        return out
