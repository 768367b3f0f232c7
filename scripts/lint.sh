#!/usr/bin/env bash
# Every linter, as CI runs them: the Rust ones (scripts/lint_rust.sh: rustfmt, clippy with
# undocumented_unsafe_blocks), then ruff (check and format) and mypy --strict over the Python
# package and the demos, and import-linter's contracts on the package's floors. Settings live in pyproject.toml, rustfmt.toml and Cargo.toml.
# Needs the dev tools of scripts/requirements-dev.txt (scripts/env.sh installs them).
#
# Usage: scripts/lint.sh        (from anywhere)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/lint_rust.sh

python_sources=(python/pygpu demos bench tests scripts kernels)
echo "lint: ruff check"
python -m ruff check "${python_sources[@]}"
echo "lint: ruff format --check"
python -m ruff format --check "${python_sources[@]}"
echo "lint: mypy --strict (python/pygpu, demos)"
python -m mypy python/pygpu demos
echo "lint: lint-imports (the package's floors: pyproject.toml [tool.importlinter])"
lint-imports --no-cache
