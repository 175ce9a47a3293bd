#!/usr/bin/env bash
# Build benches/c/mpi_pingpong.c against Debian's MPICH and run it on 2 ranks.
#
# Usage (from anywhere; paths are resolved against the repository root):
#   benches/scripts/mpich-baseline.sh [--sizes a,b,c] [--json FILE]
# Environment:
#   OUT      build directory (default: target/mpich-baseline, relative to the
#            repository root unless absolute)
#   MPIRUN_FLAGS  extra flags for mpirun.mpich (default: none)
# Arguments are passed to the benchmark unchanged; the working directory is
# not changed, so a relative --json FILE is relative to where you run this.
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)

out=${OUT:-target/mpich-baseline}
case $out in
    /*) ;;
    *) out=$repo_root/$out ;;
esac

if ! command -v mpicc.mpich >/dev/null 2>&1 || ! command -v mpirun.mpich >/dev/null 2>&1; then
    echo "mpich-baseline: MPICH not found, installing mpich libmpich-dev" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y mpich libmpich-dev
fi

src=$repo_root/benches/c/mpi_pingpong.c
bin=$out/mpi_pingpong
mkdir -p -- "$out"
mpicc.mpich -O2 -Wall -Wextra -o "$bin" "$src"

# Hydra needs no special flags for root or for 2 ranks on a 2-core host.
# shellcheck disable=SC2086
exec mpirun.mpich ${MPIRUN_FLAGS:-} -n 2 "$bin" "$@"
