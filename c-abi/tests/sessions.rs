//! Sessions (MPI 4.0 §11.3), communicators made from groups alone, datatype attributes and
//! the Fortran 90 parameterized types: the C programs of `tests/c/session/` and
//! `tests/c/types/type_attr.c`, `f90_types.c`, each self-checking with real data, run as MPI
//! jobs of 1, 2 and 4 ranks (4 oversubscribes this 2-core machine); and one Fortran program
//! (`tests/f/session_f.f90`) through the generated bindings.
//!
//! The session programs never call `MPI_Init` unless they test the two models together
//! (`session_world`). `f90_types` states MPICH 4.0.2's answers for each `(p, r)`, measured
//! with `mpicc.mpich`; the type programs also pass when built by MPICH's `mpicc` and run on
//! this library (the keyval callbacks and `MPI_DUP_FN` are MPICH's ABI). MPICH 4.0.2 itself
//! fails the session programs (its `MPI_Session_get_errhandler` reports
//! `MPI_ERRORS_ARE_FATAL` for a session opened with `MPI_ERRORS_RETURN`, and an unknown
//! process set aborts), so they are not run under it.

mod common;

use common::run_ok_at as run_at;

#[test]
fn session_model_alone_two_sessions_allreduce_and_ring() {
    run_at("session/session_only", &[1, 2, 4]);
}

#[test]
fn session_and_world_models_in_one_program() {
    run_at("session/session_world", &[1, 2, 4]);
}

#[test]
fn comm_create_from_group_subgroups_tags_and_intercomm_from_groups() {
    run_at("session/from_group", &[1, 2, 3, 4]);
}

#[test]
fn session_error_handlers_are_called() {
    run_at("session/session_errh", &[1, 2, 4]);
}

#[test]
fn datatype_attribute_callbacks_are_counted() {
    run_at("types/type_attr", &[1, 2, 4]);
}

#[test]
fn f90_types_answer_as_mpich_does() {
    run_at("types/f90_types", &[1, 2, 4]);
}

/// A session-model program ended by an error under the session's default
/// `MPI_ERRORS_ARE_FATAL`: a non-zero exit and one line naming the call, the class and how to
/// get the error back instead.
#[test]
fn a_fatal_session_error_ends_the_job_with_a_clear_message() {
    let exe = common::program("session/session_fatal");
    let run = common::mpirun(
        &exe,
        &common::Launch {
            ranks: 2,
            ..Default::default()
        },
    );
    assert!(!run.timed_out, "session_fatal hung:{}", run.describe());
    assert_ne!(run.code(), Some(0), "the job succeeded:{}", run.describe());
    let out = run.output();
    for needle in [
        "MPI_Group_from_session_pset",
        "MPI_ERR_ARG",
        "mpi://NOWHERE",
        "MPI_Session_set_errhandler",
    ] {
        assert!(
            out.contains(needle),
            "the message lacks {needle:?}:{}",
            run.describe()
        );
    }
    assert!(
        !out.contains("NOT REACHED"),
        "the program went on after the error:{}",
        run.describe()
    );
}

/// The type programs built by MPICH's `mpicc` run on this library (skipped, with a note,
/// without MPICH).
#[test]
fn type_programs_built_by_mpich_mpicc_pass_on_our_library() {
    let Some(mpich_cc) = common::installed("mpicc.mpich") else {
        println!("note: MPICH's mpicc.mpich is not installed; skipping");
        return;
    };
    for name in ["type_attr", "f90_types"] {
        let exe = common::build_with(
            &mpich_cc,
            &format!("types/{name}"),
            &format!("types_{name}-built-by-mpich"),
        );
        let launch = common::Launch {
            ranks: 2,
            ..Default::default()
        };
        common::assert_ok(&common::mpirun(&exe, &launch), name);
    }
}

#[test]
fn sessions_and_type_attributes_from_fortran() {
    let exe = common::fortran_program("session_f.f90");
    for ranks in [1, 2, 4] {
        let run = common::mpirun(
            &exe,
            &common::Launch {
                ranks,
                ..Default::default()
            },
        );
        common::assert_ok(&run, "session_f");
    }
}

/// A sessions-only program opens a new session after finalizing all of them, three rounds
/// of communicating on a fresh communicator (MPI 4.0 §11.3.1), the library going down at
/// exit; and then, with `SESSION_REINIT_WORLD=1`, starts the world model after the last
/// session (`MPI_Init` .. `MPI_Finalize`). `MPI_Initialized`/`MPI_Finalized` report the world
/// model only.
#[test]
fn sessions_open_again_after_all_were_finalized() {
    let exe = common::program("session/session_reinit");
    for ranks in [1, 2, 4] {
        for world in ["0", "1"] {
            let run = common::mpirun(
                &exe,
                &common::Launch {
                    ranks,
                    env: vec![("SESSION_REINIT_WORLD", world.into())],
                    ..Default::default()
                },
            );
            common::assert_ok(&run, "session/session_reinit");
        }
    }
}

/// The same program under MPICH's `mpiexec.hydra` (PMI-1), if installed.
#[test]
fn sessions_open_again_under_hydra() {
    let Some(hydra) = common::installed("mpiexec.hydra") else {
        eprintln!("skipped: mpiexec.hydra is not installed (Debian package mpich)");
        return;
    };
    let exe = common::program("session/session_reinit");
    for (ranks, world) in [(2, "0"), (2, "1")] {
        // `timeout` bounds a hang (Hydra has no limit of its own).
        let out = std::process::Command::new("timeout")
            .arg("60")
            .arg(&hydra)
            .arg("-n")
            .arg(ranks.to_string())
            .arg(&exe)
            .env("LD_LIBRARY_PATH", common::library_dir())
            .env("SESSION_REINIT_WORLD", world)
            .env_remove("MPI_PMI_VERSION")
            .env_remove("PMI_FD")
            .env_remove("PMI_PORT")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("mpiexec.hydra starts");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success()
                && stdout.lines().filter(|l| *l == "OK session_reinit").count() == 1,
            "under hydra ({ranks} ranks, world {world}): {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
