"""Rendered reports: ``--report-dot`` (ids that do not collide) and ``--report-html`` (one
self-contained page for failures and successes; a screenshot where Chromium is installed)."""

import re
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import ROOT, run_pvcert

pytest.importorskip("torch")

BUG = '''
from examples.bugs.row_parallel_config import make_case as _make


def make_case():
    return _make(True)
'''
EDGE = re.compile(r'^\s*("(?:[^"\\]|\\.)*")\s*->\s*("(?:[^"\\]|\\.)*");$')
NODE = re.compile(r'^\s*("(?:[^"\\]|\\.)*")\s*\[(.*)\];$')


@pytest.fixture(scope="module")
def failure(tmp_path_factory):
    """A captured bundled bug, verified with both reports written."""
    d = tmp_path_factory.mktemp("bug")
    (d / "bug.py").write_text(BUG)
    r = run_pvcert("verify", str(d / "bug.py"), "--report-dot", str(d / "r.dot"), "--report-html",
                   str(d / "r.html"), timeout=300)
    assert r.returncode == 1 and "REFUTED" in r.stdout, r.stdout + r.stderr
    return d


@pytest.fixture(scope="module")
def success(tmp_path_factory):
    d = tmp_path_factory.mktemp("ok")
    r = run_pvcert("verify", "examples/cases/tp_mlp.py", "--report-html", str(d / "r.html"), timeout=300)
    assert r.returncode == 0 and "VERIFIED" in r.stdout, r.stdout + r.stderr
    return d


def test_dot_ids_do_not_collide(failure):
    """Captured nodes are named after their first output: operator and tensor ids must differ, so
    no edge is a self-loop and every node keeps its label."""
    edges, labels = [], {}
    for line in (failure / "r.dot").read_text().splitlines()[2:-1]:
        if m := EDGE.match(line):
            edges.append(m.groups())
        elif m := NODE.match(line):
            labels[m.group(1)] = m.group(2)
        else:
            pytest.fail(f"unparsed DOT line: {line!r}")
    assert edges and not [e for e in edges if e[0] == e[1]]
    assert {x for e in edges for x in e} <= set(labels)
    assert all("label=" in a for a in labels.values())
    assert any("aten.mm.default" in a and "row_parallel_config.py:78" in a for a in labels.values())


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot not installed")
def test_dot_output_is_valid_graphviz(failure):
    r = subprocess.run(["dot", "-Tsvg", str(failure / "r.dot")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "<svg" in r.stdout, r.stderr


def _self_contained(html: str) -> None:
    assert html.startswith("<!doctype html>")
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', html), "external reference"
    assert "<script" not in html and "<link" not in html


def test_failure_page(failure):
    html = (failure / "r.html").read_text()
    _self_contained(html)
    for part in ("REFUTED", "row_parallel_config_buggy_spec", "sha256", "Input relation", "Where",
                 "(row_parallel_config.py:49) aten.mm.default", "return F.linear(self.fc2(F.gelu(",
                 "Counterexample (executed", "differ", "Neighbourhood in the spec", "Implementation explored"):
        assert part in html, part
    from verifier.report_html import svg_of

    if svg_of("digraph g {}") is not None:   # Graphviz: dot and the Python package
        assert html.count("<svg") == 2
    else:
        assert "Graphviz" in html and "is not installed" in html


def test_success_page(success):
    html = (success / "r.html").read_text()
    _self_contained(html)
    for part in ("VERIFIED", "What was proved", "distinct obligations", "Time per phase", "capture", "infer",
                 "Claim", "sha256"):
        assert part in html, part


def test_page_without_graphviz(failure, monkeypatch):
    """Where ``dot`` is missing the graphs become tables, and the page says so."""
    from verifier import report_html

    monkeypatch.setattr(report_html, "svg_of", lambda dot: None)
    html = report_html._graph("digraph x {}", [])
    assert "is not installed" in html and "<table>" in html


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed")
def test_screenshot_of_the_failure_page(failure):
    png = failure / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={png}", "--window-size=1200,900", (failure / "r.html").as_uri()],
                   capture_output=True, timeout=120)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000   # a blank page compresses to ~5 KB
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1200, 900)
    assert len(set(_pixels(data))) > 50   # text, colours and graph lines, not one flat colour


def _pixels(png: bytes) -> bytes:
    """The decompressed image data of a PNG (its IDAT chunks)."""
    out, i = b"", 8
    while i < len(png):
        n, kind = int.from_bytes(png[i:i + 4], "big"), png[i + 4:i + 8]
        if kind == b"IDAT":
            out += png[i + 8:i + 8 + n]
        i += 12 + n
    return zlib.decompress(out)


def test_report_html_unwritable_path_is_one_line(tmp_path):
    r = run_pvcert("verify", "examples/cases/tp_mlp.py", "--report-html", str(tmp_path / "no" / "r.html"),
                   timeout=300)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "r.html" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_docs_screenshots_exist():
    img = Path(ROOT) / "docs" / "img"
    for name in ("report-failure.png", "report-success.png"):
        assert (img / name).stat().st_size > 20_000, name
        assert f"img/{name}" in (Path(ROOT) / "docs" / "reports.md").read_text()
