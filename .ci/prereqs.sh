# Sourced by .ci/run and ./serve: what a fresh Debian 12 machine lacks to
# build ripple, installed only where missing.
#
# build_packages appends to the caller's `packages` array the system
# packages the build needs: a C/C++ toolchain (ring, mimalloc, lz4),
# RocksDB (librocksdb-dev), clang + libclang for its bindgen bindings, and
# curl to fetch rustup if Rust is missing. install_packages installs the
# array; ensure_rust installs Rust with rustup (edition 2024 needs a newer
# toolchain than Debian's rustc) and puts it on PATH.

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

build_packages() {
    command -v c++ >/dev/null 2>&1 || packages+=(build-essential)
    command -v clang >/dev/null 2>&1 || packages+=(clang)
    dpkg -s libclang-dev >/dev/null 2>&1 || packages+=(libclang-dev)
    # RocksDB itself: linked from Debian's package instead of compiling its
    # C++ (.cargo/config.toml).
    dpkg -s librocksdb-dev >/dev/null 2>&1 || packages+=(librocksdb-dev)
    if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
        command -v curl >/dev/null 2>&1 || packages+=(curl ca-certificates)
    fi
}

install_packages() {
    if [ "${#packages[@]}" -gt 0 ]; then
        echo "installing: ${packages[*]}"
        $SUDO apt-get update
        # --force-confold keeps a createcluster.conf written before.
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            -o Dpkg::Options::=--force-confold "${packages[@]}"
    fi
}

ensure_rust() {
    if ! command -v cargo >/dev/null 2>&1; then
        if [ ! -x "$HOME/.cargo/bin/cargo" ]; then
            curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
        fi
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
}
