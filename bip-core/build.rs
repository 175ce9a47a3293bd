//! Compiles the C example `examples-c/pingpong.c` against `include/bip.h` into a static library
//! for the `bip-c-example` binary. Its `main` is renamed `bip_c_example_main`, which the
//! binary's Rust `main` calls.

fn main() {
    const SOURCES: &[&str] = &["examples-c/pingpong.c"];
    const HEADERS: &[&str] = &["include/bip.h"];
    for path in SOURCES.iter().chain(HEADERS) {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    cc::Build::new()
        .files(SOURCES)
        .include("include")
        .define("main", "bip_c_example_main")
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .compile("bip_c_example");
}
