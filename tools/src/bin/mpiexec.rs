//! `mpiexec`: the MPI standard's name for the launcher; the same program as `mpirun`.

fn main() {
    mpi_tools::launcher::main("mpiexec")
}
