"""The example gallery (examples/, built by sphinx-gallery): every ``plot_*.py`` runs to completion in a fresh
interpreter with matplotlib's Agg backend and prints something. Deselect with ``-m 'not gallery'``."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("plot_*.py"))
EXPECTED = ("plot_cv_choose_c.py", "plot_l1_path.py", "plot_mlr_embedding.py", "plot_ranksvm_linear_vs_rbf.py",
            "plot_cutting_plane_gap.py", "plot_learning_from_clicks.py", "plot_trec_reranker.py")


def test_gallery_layout():
    """sphinx-gallery needs README.rst (the gallery header); the seven examples are there."""
    assert (EXAMPLES / "README.rst").is_file()
    names = {path.name for path in SCRIPTS}
    assert len(names) >= 7
    assert set(EXPECTED) <= names, f"missing: {sorted(set(EXPECTED) - names)}"
    for path in SCRIPTS:  # sphinx-gallery takes the title from the module docstring
        assert path.read_text(encoding="utf-8").lstrip().startswith(('"""', 'r"""')), path.name


@pytest.mark.gallery
@pytest.mark.parametrize("script", SCRIPTS, ids=[path.name for path in SCRIPTS])
def test_example_runs(script, tmp_path):
    pytest.importorskip("matplotlib")
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"{script.name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip(), f"{script.name} printed nothing"
