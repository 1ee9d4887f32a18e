"""Run the Python examples of the documentation.

Every ```python fenced block of README.md and docs/**/*.md is executed, the
blocks of one file in order in one namespace (so a page reads as a session).
A failure names the file, the block and its first line; tracebacks point at
the markdown file's own line numbers.
"""
from __future__ import annotations

import re
import traceback
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(first line number, code)`` of each ```python block, in order."""
    blocks = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start(1)) + 1
        blocks.append((line, m.group(1)))
    return blocks


def test_documentation_exists():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    for required in ("README.md", "docs/index.md", "docs/tutorial.md", "docs/theory.md"):
        assert required in names, f"{required} is missing"
    assert any(n.startswith("docs/mechanisms/") for n in names)


def test_block_parser():
    text = "x\n```python\na = 1\n```\n```text\nno\n```\n```python\nb = a + 1\n```\n"
    assert python_blocks(text) == [(3, "a = 1\n"), (9, "b = a + 1\n")]


# pages whose examples simulate or sweep (tens of seconds each): skipped by make test-fast
SLOW_PAGES = {"docs/loads.md", "docs/closed.md", "docs/linearization.md"}


@pytest.mark.parametrize("page", [
    pytest.param(p, marks=pytest.mark.slow) if p.relative_to(ROOT).as_posix() in SLOW_PAGES
    else p for p in PAGES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_markdown_examples(page: Path, tmp_path, monkeypatch):
    pytest.importorskip("numpy")
    monkeypatch.chdir(tmp_path)            # examples that write files stay out of the repo
    monkeypatch.setenv("MPLBACKEND", "Agg")
    rel = page.relative_to(ROOT).as_posix()
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    namespace: dict = {"__name__": "__docs__"}
    for k, (line, code) in enumerate(blocks, start=1):
        # pad so that line numbers in tracebacks are those of the markdown file
        source = "\n" * (line - 1) + code
        failure = None
        try:
            exec(compile(source, str(page), "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - report any failure with its place
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next))
            failure = (f"{rel}: python block {k} of {len(blocks)} (line {line}) raised "
                       f"{type(exc).__name__}: {exc}\n{tb}")
        if failure is not None:
            pytest.fail(failure, pytrace=False)


def test_demo_runs_quickly(capsys):
    """``make demo`` (``python -m kic.demo``) prints its tables in well under 5 s."""
    import time

    from kic import demo

    start = time.perf_counter()
    assert demo.main([]) == 0
    elapsed = time.perf_counter() - start
    out = capsys.readouterr().out
    for text in ("PUMA 560", "I* (kg m^2)", "q'^T P* q' [N m]", "gravity T_L [N m]",
                 "tau1 [N m]", "Planar two-link arm"):
        assert text in out
    assert elapsed < 5.0, f"the demo took {elapsed:.1f} s"
