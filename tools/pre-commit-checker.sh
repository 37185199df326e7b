#!/bin/sh
# Runs one of the project's checkers for a pre-commit hook (.pre-commit-config.yaml): the
# active virtual environment's, else the project's .venv's (the README's set-up), else the
# one on PATH. A git hook runs with the committer's PATH, where the venv is rarely active;
# pyright is told that venv's Python, so it resolves the packages installed there.
tool="$1"
shift
for dir in "${VIRTUAL_ENV:+$VIRTUAL_ENV/bin}" .venv/bin; do
    if [ -n "$dir" ] && [ -x "$dir/$tool" ]; then
        if [ "$tool" = pyright ]; then
            exec "$dir/$tool" --pythonpath "$dir/python" "$@"
        fi
        exec "$dir/$tool" "$@"
    fi
done
exec "$tool" "$@"
