"""Where things are: the checkout pycert runs from."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The repository root (pycert runs from a checkout or an editable install of one)."""
