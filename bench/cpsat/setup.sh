#!/usr/bin/env bash
# Creates bench/cpsat/.venv with OR-Tools (CP-SAT), the only dependency of the Python scripts here.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet "ortools==9.15.6755"
.venv/bin/python -c "import ortools; print('ortools', ortools.__version__)"
