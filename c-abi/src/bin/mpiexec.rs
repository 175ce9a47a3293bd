//! `mpiexec`: the MPI standard's name for the launcher; the same program as `mpirun`.

#[path = "../tools/launcher/mod.rs"]
mod launcher;

fn main() {
    launcher::main("mpiexec")
}
