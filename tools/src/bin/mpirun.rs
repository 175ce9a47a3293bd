//! `mpirun`: starts the ranks of an MPI job on this host over the shared-memory fabric.
//! `mpirun --help` lists the options; [`mpi_tools::launcher`] documents the behaviour.

fn main() {
    mpi_tools::launcher::main("mpirun")
}
