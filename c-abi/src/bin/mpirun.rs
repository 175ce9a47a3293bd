//! `mpirun`: starts the ranks of an MPI job on this host over the shared-memory fabric.
//! `mpirun --help` lists the options; the launcher module documents the behaviour.

#[path = "../tools/launcher/mod.rs"]
mod launcher;

fn main() {
    launcher::main("mpirun")
}
