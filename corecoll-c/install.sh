#!/usr/bin/env bash
# Builds and installs the C library of corecoll: libcorecoll.so, libcorecoll.a, corecoll.h and
# the pkg-config file corecoll.pc.
#
#   corecoll-c/install.sh [--mpi] [PREFIX]      (PREFIX defaults to /usr/local)
#
# --mpi builds corecoll_team_create_mpi (teams over the threads of several MPI processes),
# which links the system's MPI (Debian: openmpi-bin libopenmpi-dev libclang-dev). Then:
#   cc -fopenmp prog.c $(pkg-config --cflags --libs corecoll)
# with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig if PREFIX is not a system prefix, and
# LD_LIBRARY_PATH=PREFIX/lib (or -Wl,-rpath) to run against the shared library.
set -euo pipefail
features=()
if [[ "${1:-}" == "--mpi" ]]; then
    features=(--features mpi)
    shift
fi
prefix="${1:-/usr/local}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release -p corecoll-c "${features[@]}"
target="${CARGO_TARGET_DIR:-target}/release"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 644 "$target/libcorecoll.a" "$prefix/lib/"
install -m 755 "$target/libcorecoll.so" "$prefix/lib/"
install -m 644 corecoll-c/include/corecoll.h "$prefix/include/"
cat > "$prefix/lib/pkgconfig/corecoll.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: corecoll
Description: Collective communication between the threads of an OpenMP region and across MPI processes
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lcorecoll
Libs.private: -lpthread -ldl -lm
PC
echo "installed libcorecoll ($version${features:+, with MPI}) in $prefix"
