#!/usr/bin/env bash
# Validates sweep-job.yaml against the Kubernetes API's own JSON schemas (the PyPI package
# kubernetes-validate, which ships them), strictly: an unknown or misspelt field fails. Then
# checks that the validator does catch one (a misspelt `completionMode`). Needs Python 3 and
# PyPI; no cluster. Run from anywhere:
#
#   deploy/kubernetes/validate.sh
#
# deploy/kubernetes/validate.log is the output of its last recorded run.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
venv="$(mktemp -d)"
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q kubernetes-validate==1.37.0
echo "== kubernetes-validate $("$venv/bin/pip" show kubernetes-validate | sed -n 's/^Version: //p')"
for version in 1.29.0 1.33.0 1.37.0; do
    "$venv/bin/kubernetes-validate" --strict -k "$version" "$here/sweep-job.yaml"
done
bad="$venv/bad.yaml"
sed 's/completionMode:/completionModee:/' "$here/sweep-job.yaml" >"$bad"
refused=$("$venv/bin/kubernetes-validate" --strict "$bad" 2>&1 || true)
if grep -q "completionModee' was unexpected" <<<"$refused"; then
    echo "== the validator refuses a misspelt field (completionModee), so the passes above mean something"
else
    echo "== the validator let a misspelt field through" >&2
    exit 1
fi
