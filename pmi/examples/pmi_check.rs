//! A rank that checks its process manager's PMI: rank and size, then put, fence and get of
//! every rank's value (with characters that need encoding), a missing key, a barrier and
//! finalize. Start it with any PMI process manager:
//!
//! ```text
//! mpiexec.hydra -n 4 target/debug/examples/pmi_check
//! MPI_PMI_VERSION=2 mpiexec.hydra -n 4 target/debug/examples/pmi_check
//! mpirun -n 4 target/debug/examples/pmi_check
//! ```
//!
//! Each rank prints `pmi_check: rank R of N ok (PMI-x, kvs NAME, mapping M)` and exits 0, or
//! says what failed and exits 1. `pmi_check abort R CODE`: rank R aborts the job with CODE
//! instead (the others wait in a fence that never completes).

use pmi::{Client, PmiError};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("pmi_check: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The value rank `rank` puts: `=`, `;`, a space, `%` and a non-ASCII letter all survive.
fn card(rank: usize) -> String {
    format!("rank={rank};pid=…;note=50% of {rank}")
}

fn run(args: &[String]) -> Result<(), String> {
    let client = Client::from_env().map_err(|e| e.to_string())?;
    let Some(mut client) = client else {
        return Err("no process manager in the environment (PMI_FD / PMI_PORT unset)".into());
    };
    let (rank, size) = (client.rank(), client.size());
    if let [mode, who, code] = args {
        if mode == "abort" {
            let who: usize = who.parse().map_err(|_| "abort RANK CODE")?;
            let code: i32 = code.parse().map_err(|_| "abort RANK CODE")?;
            if rank == who {
                client
                    .abort(code, &format!("pmi_check rank {rank} aborts with {code}"))
                    .map_err(|e| e.to_string())?;
                std::process::exit(code);
            }
            client.fence().map_err(|e| e.to_string())?;
            return Err(format!(
                "rank {rank}: the fence completed although rank {who} aborted"
            ));
        }
    }
    if let Ok(expected) = std::env::var("PMI_SIZE") {
        if expected != size.to_string() {
            return Err(format!("size {size} but PMI_SIZE={expected}"));
        }
    }
    client.put("card", &card(rank)).map_err(|e| e.to_string())?;
    client.fence().map_err(|e| e.to_string())?;
    for other in 0..size {
        let value = client.get(other, "card").map_err(|e| e.to_string())?;
        if value != card(other) {
            return Err(format!(
                "rank {rank}: rank {other}'s card is {value:?}, expected {:?}",
                card(other)
            ));
        }
    }
    match client.get((rank + 1) % size, "never-put") {
        Err(PmiError::NotFound { .. }) => {}
        other => return Err(format!("rank {rank}: a key nobody put gave {other:?}")),
    }
    let mapping = client.process_mapping().map_err(|e| e.to_string())?;
    client.barrier().map_err(|e| e.to_string())?;
    let (version, kvs) = (client.version(), client.kvs_name().to_string());
    client.finalize().map_err(|e| e.to_string())?;
    println!(
        "pmi_check: rank {rank} of {size} ok ({version}, kvs {kvs}, mapping {})",
        mapping.as_deref().unwrap_or("none")
    );
    Ok(())
}
