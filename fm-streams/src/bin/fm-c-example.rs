//! Runs the C example `examples-c/handlers.c` (FM 2.x handlers written against `fm.h` that
//! receive a header, then the payload into a buffer chosen from it), compiled by `build.rs`
//! with its `main` renamed `fm_c_example_main`.
//!
//! Start it as ranks of a job, e.g. `mpirun -n 2 fm-c-example`; it exits with the C program's
//! status.

use std::ffi::{c_char, c_int, CString};

extern "C" {
    fn fm_c_example_main(argc: c_int, argv: *const *const c_char) -> c_int;
}

fn main() {
    // The C code calls FM_initialize, FM_send_piece... by name. Naming fm-streams' table of
    // them keeps their definitions in the link.
    std::hint::black_box(&fm_streams::ffi::EXPORTS);

    // An argument with an interior NUL cannot reach C; pass it empty instead.
    let args: Vec<CString> = std::env::args_os()
        .map(|a| CString::new(a.into_encoded_bytes()).unwrap_or_default())
        .collect();
    let mut argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let argc = c_int::try_from(args.len()).expect("fewer than 2^31 arguments");
    // SAFETY: `argv` is an array of `argc` pointers to NUL-terminated strings followed by a null
    // pointer, as C's `main` expects; `args` and `argv` outlive the call.
    let status = unsafe { fm_c_example_main(argc, argv.as_ptr()) };
    std::process::exit(status);
}
