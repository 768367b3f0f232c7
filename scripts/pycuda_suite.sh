#!/usr/bin/env bash
# PyCUDA's own tests and example programs against pygpu, with `pycuda` renamed to `pygpu` in
# their imports (issue 11/12 acceptance). PyCUDA's files are fetched at use time into the
# git-ignored .pycuda-tests/, never kept in this repository.
#
#   here:  scripts/pycuda_suite.sh fetch      # needs the network: PyCUDA's sdist from PyPI, renamed
#   there: scripts/pycuda_suite.sh run        # after scripts/gpu_run.sh installed the wheel (or with
#                                             # PYGPU_BACKEND=host in .venv): logs into $OUT or /tmp
# Carry .pycuda-tests to the GPU machine with the wheels.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="${PYCUDA_VERSION:-2026.1}"
dest=.pycuda-tests
case "${1:-}" in
fetch)
    url=$(python3 -c "
import json, sys, urllib.request
info = json.load(urllib.request.urlopen('https://pypi.org/pypi/pycuda/json'))
print(next(u['url'] for u in info['releases']['$version'] if u['packagetype'] == 'sdist'))") || exit 2
    tmp=$(mktemp -d)
    curl -sSLo "$tmp/pycuda.tar.gz" "$url" && tar xzf "$tmp/pycuda.tar.gz" -C "$tmp" || exit 2
    rm -rf "$dest" && mkdir -p "$dest"
    cp -r "$tmp/pycuda-$version/test" "$tmp/pycuda-$version/examples" "$dest/"
    rm -rf "$tmp"
    find "$dest" -name '*.py' -exec sed -i -E \
        's/\bimport pycuda\b/import pygpu/g; s/\bfrom pycuda\b/from pygpu/g; s/\bpycuda\./pygpu./g' {} +
    # PyCUDA registers its `cuda` mark in its own configuration, which the sdist's tests lack.
    printf '[pytest]\nmarkers =\n    cuda: PyCUDA test marker\n' >"$dest/test/pytest.ini"
    echo "pycuda_suite: PyCUDA $version's tests and examples, renamed, in $dest/"
    ;;
run)
    [ -d "$dest/test" ] || { echo "pycuda_suite: run 'scripts/pycuda_suite.sh fetch' first" >&2; exit 2; }
    out="${OUT:-/tmp}"
    if [ -d /tmp/pygpu-site ]; then export PYTHONPATH="/tmp/pygpu-site${PYTHONPATH:+:$PYTHONPATH}"; fi
    export PYGPU_BACKEND="${PYGPU_BACKEND:-cuda}" PYTHONUNBUFFERED=1 MPLBACKEND=Agg
    # 8gb/16gb: sized for big GPUs; big_array: on the host backend they need ~17 GB of RAM.
    deselect="not 8gb and not 16gb"
    [ "$PYGPU_BACKEND" = host ] && deselect="$deselect and not big_array"
    (cd "$dest" && timeout 480 python3 -m pytest -q -p no:cacheprovider -o addopts="" -k "$deselect" test) \
        >"$out/pycuda-tests.log" 2>&1
    tail -n 3 "$out/pycuda-tests.log"
    : >"$out/pycuda-examples.log"
    for f in "$dest"/examples/*.py "$dest"/examples/from-wiki/*.py; do
        (cd "$(dirname "$f")" && timeout 60 python3 "$(basename "$f")" >/tmp/pycuda-example.out 2>&1 </dev/null)
        echo "$? $f $(tail -n 1 /tmp/pycuda-example.out | cut -c1-200)" >>"$out/pycuda-examples.log"
    done
    echo "examples run to completion: $(grep -c '^0 ' "$out/pycuda-examples.log") of $(wc -l <"$out/pycuda-examples.log")" |
        tee -a "$out/pycuda-examples.log"
    ;;
*)
    echo "usage: scripts/pycuda_suite.sh fetch|run" >&2
    exit 2
    ;;
esac
