# Sourced by the scripts: a virtual environment in .venv with the build and test tools, the
# bundled kernels built, and pygpu installed into it from this checkout.
#
# Each step runs only when what it depends on changed since it last succeeded (a hash of its
# inputs, kept in .venv/.pygpu-stamps/), so a warm rerun takes about a second. The kernels are
# built for the backends this machine can run: host, plus cuda where an NVIDIA GPU is present and
# hip where an AMD one is; PYGPU_KERNEL_TARGETS="cuda hip host" (CI) chooses them explicitly.
# The tools' own output goes to .venv/setup.log and is shown only when a step fails.

_pygpu_stamps=.venv/.pygpu-stamps
_pygpu_log=.venv/setup.log

_pygpu_say() { printf '[setup] %s\n' "$*" >&2; }

# _pygpu_hash FILE...: one digest over the names and contents of the files (folders: every file
# under them), in a stable order.
_pygpu_hash() {
    find "$@" -type f ! -name '*.pyc' -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum |
        cut -d' ' -f1
}

# _pygpu_run MESSAGE COMMAND...: says what is happening, runs COMMAND with its output in the log
# (the end of it shown if it fails), then says how long it took.
_pygpu_run() {
    local message="$1" start=$SECONDS status=0
    shift
    _pygpu_say "$message"
    "$@" >>"$_pygpu_log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        _pygpu_say "failed (exit $status); the end of $_pygpu_log:"
        tail -n 40 "$_pygpu_log" >&2
        return "$status"
    fi
    _pygpu_say "  done in $((SECONDS - start)) s"
}

# _pygpu_step NAME DIGEST MESSAGE COMMAND...: _pygpu_run, unless NAME's stamp holds DIGEST (the
# step succeeded before with the same inputs).
_pygpu_step() {
    local name="$1" digest="$2"
    shift 2
    [ "$(cat "$_pygpu_stamps/$name" 2>/dev/null)" = "$digest" ] && return 0
    rm -f "$_pygpu_stamps/$name"
    _pygpu_run "$@" || return
    mkdir -p "$_pygpu_stamps"
    printf '%s\n' "$digest" >"$_pygpu_stamps/$name"
}

# The backends whose kernels this machine needs.
_pygpu_kernel_targets() {
    if [ -n "${PYGPU_KERNEL_TARGETS:-}" ]; then
        echo "$PYGPU_KERNEL_TARGETS"
        return
    fi
    local targets=""
    if [ -e /dev/nvidia0 ] || nvidia-smi -L >/dev/null 2>&1; then targets="cuda "; fi
    if [ -e /dev/kfd ]; then targets="${targets}hip "; fi
    echo "${targets}host"
}

_pygpu_setup() {
    if [ ! -x .venv/bin/python ]; then
        _pygpu_say "creating the virtual environment .venv"
        python3 -m venv .venv || return
    fi
    # shellcheck disable=SC1091
    source .venv/bin/activate || return
    : >"$_pygpu_log"

    # PYGPU_SETUP=demo (scripts/demo.sh): only what the demo needs, unless the full set is there.
    local demo="" tools_digest
    tools_digest="$(_pygpu_hash scripts/requirements-dev.txt .venv/pyvenv.cfg)"
    if [ "${PYGPU_SETUP:-}" = demo ] && [ "$(cat "$_pygpu_stamps/tools" 2>/dev/null)" != "$tools_digest" ]; then
        demo=1
        _pygpu_step tools-demo "$(_pygpu_hash scripts/requirements-demo.txt .venv/pyvenv.cfg)" \
            "installing what the demo needs into .venv (pip: maturin, numpy, matplotlib; about 30 s the first time) ..." \
            python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-demo.txt || return
        # Without zig (a test and release tool), the host kernels link against this machine's glibc.
        python -c 'import ziglang' 2>/dev/null || export PYGPU_KERNELS_GLIBC="${PYGPU_KERNELS_GLIBC-}"
    else
        _pygpu_step tools "$tools_digest" \
            "installing the build and test tools into .venv (pip; 1-2 min the first time) ..." \
            python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-dev.txt || return
    fi

    local kernel_inputs target targets
    kernel_inputs="$(_pygpu_hash kernels/build.sh kernels/selfcheck.py kernels/nvrtc_compile.py \
        kernels/*.cu kernels/*.h python/pygpu/include)"
    # Kernels linked for this machine's glibc (the demo's set-up) are rebuilt for the wheels' 2.28.
    [ "${PYGPU_KERNELS_GLIBC-2.28}" = 2.28 ] || kernel_inputs="$kernel_inputs-glibc-${PYGPU_KERNELS_GLIBC}"
    # The demo's set-up builds only the demo's kernels (burgers); pygpu builds any other bundled
    # kernels from the sources embedded in its extension when they are first used.
    local only="" probe=testing what="the bundled kernels" took="about 30 s per backend on 2 cores"
    [ -n "$demo" ] && only=burgers probe=burgers what="the demo's kernels" took="a few seconds"
    targets=()
    for target in $(_pygpu_kernel_targets); do
        # Rebuilt when a source changed or the built files are gone (git clean); the full set's
        # stamp also stands for the demo's subset.
        if { [ "$(cat "$_pygpu_stamps/kernels-$target" 2>/dev/null)" != "$kernel_inputs" ] &&
            { [ -z "$only" ] || [ "$(cat "$_pygpu_stamps/kernels-$target-$only" 2>/dev/null)" != "$kernel_inputs" ]; }; } ||
            [ ! -e "python/pygpu/kernels/$(case $target in host) echo "lib$probe.so" ;; cuda) echo "$probe.ptx" ;;
                hip) echo "$probe.hsaco" ;; esac)" ]; then
            targets+=("$target")
        fi
    done
    if [ ${#targets[@]} -gt 0 ]; then
        _pygpu_run "building $what for ${targets[*]} (kernels/build.sh; $took$(
            [[ " ${targets[*]} " == *" cuda "* ]] && echo ', plus 313 MiB of pinned CUDA compilers once'
        )) ..." env PYGPU_KERNEL_SOURCES="$only" kernels/build.sh "${targets[@]}" || return
        mkdir -p "$_pygpu_stamps"
        for target in "${targets[@]}"; do
            printf '%s\n' "$kernel_inputs" >"$_pygpu_stamps/kernels-$target${only:+-$only}"
        done
    fi

    # pygpu itself: installed editable, so Python changes need no reinstall; the Rust extension
    # (which embeds the kernel sources) is rebuilt when its inputs change.
    compgen -G ".venv/lib/python3*/site-packages/pygpu-*.dist-info" >/dev/null || rm -f "$_pygpu_stamps/pygpu"
    # The demo builds with the lighter `demo` profile (Cargo.toml); the tests rebuild with release.
    local profile=release
    [ -n "$demo" ] && profile=demo
    _pygpu_step pygpu "$(_pygpu_hash src build.rs Cargo.toml Cargo.lock pyproject.toml rust-toolchain.toml \
        kernels/*.cu kernels/*.h .venv/pyvenv.cfg)$([ "$profile" = release ] || echo "-$profile")" \
        "building pygpu's Rust extension and installing it into .venv (maturin, $profile; $(
            [ "$profile" = release ] && echo '2-4 min' || echo 'about 30 s') the first time) ..." \
        maturin develop --profile "$profile" || return
}

_pygpu_setup
