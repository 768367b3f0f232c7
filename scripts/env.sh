# Sourced by the scripts: a virtual environment in .venv with the build and test tools,
# the kernels built, and pygpu installed into it from this checkout.
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
# shellcheck disable=SC1091
source .venv/bin/activate
python -m pip install -q --disable-pip-version-check -r scripts/requirements-dev.txt
if [ -x kernels/build.sh ]; then
    kernels/build.sh
fi
maturin develop -q --release
