"""`lsp` through an embedded run, against a real basedpyright on a small project."""

from __future__ import annotations

from conftest import REPO, require, write_files

from agent_tools import Run


def test_lsp_answers_from_basedpyright(tmp_path):
    bin_dir = REPO / ".venv/bin"
    require(
        "basedpyright",
        (bin_dir / "basedpyright-langserver").is_file(),
        "python3 -m venv .venv && .venv/bin/pip install basedpyright",
    )
    root = (tmp_path / "project").resolve()
    write_files(
        root,
        {
            "pyproject.toml": '[project]\nname = "e2e"\nversion = "0.1.0"\n',
            "pkg/__init__.py": "",
            "pkg/shapes.py": 'def add(left: int, right: int) -> int:\n    """Adds two numbers."""\n    return left + right\n',
            "pkg/main.py": "from pkg.shapes import add\n\n\ndef broken() -> int:\n    return add(1, 2) + \"text\"\n",
            "agent-tools.toml": f'[lsp]\npath = ["{bin_dir}"]\n',
        },
    )
    with Run(root, approval="allow") as run:
        definition = run.call("lsp", {"operation": "definition", "path": "pkg/main.py", "line": 5, "symbol": "add"})
        assert definition.text == (
            "1 definition of `add` (pkg/main.py:5):\npkg/shapes.py:1: def add(left: int, right: int) -> int:"
        ), definition.text
        diagnostics = run.call("lsp", {"operation": "diagnostics", "path": "pkg/main.py"})
        assert not diagnostics.is_error, diagnostics.text
        assert "pkg/main.py:5" in diagnostics.text and "error" in diagnostics.text, diagnostics.text
        # A write reports the errors it introduced (diagnostics on write), through the same run.
        wrote = run.call("write", {"path": "pkg/more.py", "content": "from pkg.shapes import add\n\nadd('a', 'b')\n"})
        assert not wrote.is_error, wrote.text
        assert "pkg/more.py:3" in wrote.text, wrote.text
