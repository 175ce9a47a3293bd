//! A Slurm cluster in a temporary directory for tests (being written).
