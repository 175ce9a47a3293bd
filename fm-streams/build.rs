//! Compiles the C example `examples-c/handlers.c` against `include/fm.h` into a static library
//! for the `fm-c-example` binary. Its `main` is renamed `fm_c_example_main`, which the binary's
//! Rust `main` calls.

fn main() {
    const SOURCES: &[&str] = &["examples-c/handlers.c"];
    const HEADERS: &[&str] = &["include/fm.h"];
    for path in SOURCES.iter().chain(HEADERS) {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    cc::Build::new()
        .files(SOURCES)
        .include("include")
        .define("main", "fm_c_example_main")
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .compile("fm_c_example");
}
