#!/usr/bin/env bash
# Builds the documentation site (MkDocs, mkdocs.yml; pages in docs/, the API reference generated
# from the package's docstrings by mkdocstrings) into site/ (git-ignored), in strict mode: a
# warning (a broken link or anchor between pages, a page left out of the nav, an API name that
# does not resolve) fails the build. Also checks that the README's links to docs/ resolve.
#
#   scripts/docs.sh            # build into site/; open site/index.html
#   scripts/docs.sh serve      # live preview on http://127.0.0.1:8000
#
# Sets up .venv as the other scripts do (scripts/env.sh), plus the pinned docs tools
# (scripts/requirements-docs.txt).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck disable=SC1091
source scripts/env.sh

_pygpu_step docs-tools "$(_pygpu_hash scripts/requirements-docs.txt .venv/pyvenv.cfg)" \
    "installing the docs tools into .venv (pip; MkDocs, mkdocstrings) ..." \
    python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-docs.txt

python - <<'PY'
import re
import sys
from pathlib import Path

# The README is not a page of the site (GitHub shows it), so mkdocs does not check its links.
broken = [
    target
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", Path("README.md").read_text(encoding="utf-8"))
    if "://" not in target and not Path(target).exists()
]
if broken:
    sys.exit(f"docs: README.md links to files that do not exist: {', '.join(broken)}")
PY

if [ "${1:-}" = serve ]; then
    exec python -m mkdocs serve
fi
echo "== mkdocs build --strict (site/)"
start=$SECONDS
PYGPU_BACKEND="${PYGPU_BACKEND:-host}" python -m mkdocs build --strict --quiet
echo "docs: built site/ in $((SECONDS - start)) s; open site/index.html"
