//! Tests of the compiler wrappers (`mpicc`, `mpicxx`) and of `mpi-install`, run as real
//! processes.
//!
//! Most tests need neither the real header nor the real library: they copy the wrapper into a
//! scratch prefix with a dummy `mpi.h` and `libmpi.so`, and point `MPICH_CC` at a small shell
//! script that records its arguments and exits with a chosen status. The tests that compile and
//! link a real MPI program print a note and skip while the header or the library is not built
//! yet.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const MPICC: &str = env!("CARGO_BIN_EXE_mpicc");
const MPICXX: &str = env!("CARGO_BIN_EXE_mpicxx");
const MPI_INSTALL: &str = env!("CARGO_BIN_EXE_mpi-install");

/// The header in the source tree (`c-abi/include/mpi.h`), written by the library's authors.
fn source_header() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../c-abi/include/mpi.h")
}

/// A build directory as `cargo build` leaves it (`target/debug`), made of this test build's
/// own outputs: copies of the tools and of the library the test build produced (c-abi is a
/// dev-dependency), with the library's other names. A test build leaves its `libmpi.so` in
/// `target/debug/deps/` and does not update `target/debug/libmpi.so` (stale, or missing on a
/// fresh checkout), so the real directory cannot be used as it is (see `mpi_staging`, which
/// c-abi's tests use too).
fn build_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("build");
        mpi_staging::stage_build(
            &dir,
            &["mpicc", "mpicxx", "mpi-install", "mpirun", "mpiexec"],
        );
        dir
    })
    .clone()
}

/// A fresh, empty directory for one test under cargo's scratch area.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wrappers-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create scratch directory");
    dir.canonicalize().expect("canonical scratch directory")
}

/// A command for a wrapper with the variables that steer it cleared, so the test runner's
/// environment cannot change the outcome.
fn wrapper(program: impl AsRef<Path>) -> Command {
    let mut command = Command::new(program.as_ref());
    for variable in [
        "MPICH_CC",
        "MPICH_CXX",
        "MPICC_PROFILE",
        "MPICXX_PROFILE",
        "MPI_WRAPPER_RECURSION_CHECK",
    ] {
        command.env_remove(variable);
    }
    command
}

/// Runs `command` to completion. Tests run in parallel threads and copy executables: a child
/// forked by another thread can briefly hold a just-written file open for writing, and exec
/// then fails with "text file busy" until that child has exec'd. Retrying settles it.
fn run(command: &mut Command) -> Output {
    let mut attempts = 0;
    loop {
        match command.output() {
            Err(error) if error.raw_os_error() == Some(libc::ETXTBSY) && attempts < 50 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result.expect("start the program under test"),
        }
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write_executable(path: &Path, text: &str) {
    fs::write(path, text).expect("write script");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("make script executable");
}

/// A prefix in the installed layout holding copies of the real wrappers and a dummy header and
/// library. Returns the prefix.
fn fake_prefix(name: &str) -> PathBuf {
    let prefix = scratch(name);
    for sub in ["bin", "include", "lib"] {
        fs::create_dir_all(prefix.join(sub)).unwrap();
    }
    fs::copy(MPICC, prefix.join("bin/mpicc")).expect("copy mpicc");
    fs::copy(MPICXX, prefix.join("bin/mpicxx")).expect("copy mpicxx");
    fs::write(prefix.join("include/mpi.h"), "/* dummy */\n").unwrap();
    fs::write(prefix.join("lib/libmpi.so"), "dummy").unwrap();
    prefix
}

/// A stand-in compiler: records its arguments one per line in `<dir>/args`, exits with
/// `$RECORD_EXIT` (default 0). Returns the compiler command, `/bin/sh <script>`: two words, so
/// it also checks that the compiler variable is split into words, and the wrapper execs the
/// shell rather than a file this test has just written (see [`run`]).
fn recorder(dir: &Path) -> String {
    let script = dir.join("record-cc");
    let log = dir.join("args");
    fs::write(
        &script,
        format!(
            "printf '%s\\n' \"$@\" > '{}'\nexit ${{RECORD_EXIT:-0}}\n",
            log.display()
        ),
    )
    .expect("write the stand-in compiler");
    format!("/bin/sh {}", script.display())
}

fn recorded_args(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join("args"))
        .expect("the stand-in compiler ran")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The flags the wrapper appends for a prefix in the installed layout.
fn prefix_flags(prefix: &Path, linking: bool) -> Vec<String> {
    let mut flags = vec![format!("-I{}/include", prefix.display())];
    if linking {
        flags.push(format!("-L{}/lib", prefix.display()));
        flags.push(format!("-Wl,-rpath,{}/lib", prefix.display()));
        flags.push("-lmpi".to_owned());
    }
    flags
}

/// Whether the built library defines `symbol` (false when `nm` is unavailable).
fn library_defines(symbol: &str) -> bool {
    let library = build_dir().join("libmpi.so");
    let Ok(output) = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&library)
        .output()
    else {
        return false;
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .any(|line| line.split_whitespace().last() == Some(symbol))
}

const HELLO_C: &str = r#"#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank = -1, size = -1;
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d\n", rank, size);
    return MPI_Finalize() == MPI_SUCCESS ? 0 : 3;
}
"#;

#[test]
fn show_in_place_names_existing_paths() {
    if !source_header().is_file() {
        println!(
            "note: skipped, {} does not exist yet",
            source_header().display()
        );
        return;
    }
    let output = run(wrapper(build_dir().join("mpicc")).arg("-show"));
    assert!(
        output.status.success(),
        "mpicc -show failed: {}",
        stderr(&output)
    );
    let line = stdout(&output);
    let words: Vec<&str> = line.split_whitespace().collect();
    let include = words
        .iter()
        .find_map(|w| w.strip_prefix("-I"))
        .expect("-I in -show");
    let lib = words
        .iter()
        .find_map(|w| w.strip_prefix("-L"))
        .expect("-L in -show");
    let rpath = words
        .iter()
        .find_map(|w| w.strip_prefix("-Wl,-rpath,"))
        .expect("rpath in -show");
    assert!(
        Path::new(include).join("mpi.h").is_file(),
        "-I{include} holds no mpi.h"
    );
    assert!(
        Path::new(lib).join("libmpi.so").is_file(),
        "-L{lib} holds no libmpi.so"
    );
    assert_eq!(rpath, lib, "rpath and -L differ in: {line}");
    assert_eq!(words.last(), Some(&"-lmpi"), "-lmpi is not last in: {line}");
    assert_eq!(
        Path::new(lib),
        build_dir().canonicalize().unwrap(),
        "library is not the one next to mpicc"
    );
}

#[test]
fn show_in_an_installed_layout_points_inside_the_prefix() {
    let prefix = fake_prefix("show-prefix");
    let output = run(wrapper(prefix.join("bin/mpicc")).arg("-show"));
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = std::iter::once("cc".to_owned())
        .chain(prefix_flags(&prefix, true))
        .collect::<Vec<_>>();
    assert_eq!(stdout(&output), expected.join(" "));

    let output = run(wrapper(prefix.join("bin/mpicxx")).args(["-show", "-o", "p", "p.cc"]));
    let expected = ["c++", "-o", "p", "p.cc"]
        .map(String::from)
        .into_iter()
        .chain(prefix_flags(&prefix, true));
    assert_eq!(stdout(&output), expected.collect::<Vec<_>>().join(" "));
    fs::remove_dir_all(&prefix).ok();
}

#[test]
fn compile_only_commands_get_no_link_flags() {
    let prefix = fake_prefix("compile-only");
    for flag in ["-c", "-S", "-E", "-M", "-MM"] {
        let output = run(wrapper(prefix.join("bin/mpicc")).args(["-show", flag, "x.c"]));
        let expected = ["cc", flag, "x.c"]
            .map(String::from)
            .into_iter()
            .chain(prefix_flags(&prefix, false));
        assert_eq!(
            stdout(&output),
            expected.collect::<Vec<_>>().join(" "),
            "for {flag}"
        );
    }
    fs::remove_dir_all(&prefix).ok();
}

#[test]
fn mpich_cc_is_honoured_and_arguments_pass_through_in_order() {
    let prefix = fake_prefix("mpich-cc");
    let compiler = recorder(&prefix);
    let user_args = [
        "-O2",
        "-DGREETING=\"hello world\"",
        "-o",
        "prog",
        "prog.c",
        "-lm",
    ];
    let output = run(wrapper(prefix.join("bin/mpicc"))
        .env("MPICH_CC", &compiler)
        .args(user_args));
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = user_args
        .map(String::from)
        .into_iter()
        .chain(prefix_flags(&prefix, true));
    assert_eq!(recorded_args(&prefix), expected.collect::<Vec<_>>());

    // -cc= wins over the environment, and is not passed on.
    fs::remove_file(prefix.join("args")).unwrap();
    let option = format!("-cc={compiler}");
    let output = run(wrapper(prefix.join("bin/mpicc"))
        .env("MPICH_CC", "/nonexistent/cc")
        .args([&option, "-c", "x.c"]));
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = ["-c", "x.c"]
        .map(String::from)
        .into_iter()
        .chain(prefix_flags(&prefix, false));
    assert_eq!(recorded_args(&prefix), expected.collect::<Vec<_>>());
    fs::remove_dir_all(&prefix).ok();
}

#[test]
fn mpicxx_uses_mpich_cxx_not_mpich_cc() {
    let prefix = fake_prefix("mpich-cxx");
    let compiler = recorder(&prefix);
    let output = run(wrapper(prefix.join("bin/mpicxx"))
        .env("MPICH_CC", "/nonexistent/cc")
        .env("MPICH_CXX", &compiler)
        .args(["-c", "p.cc"]));
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(recorded_args(&prefix)[..2], ["-c", "p.cc"]);
    fs::remove_dir_all(&prefix).ok();
}

#[test]
fn exit_status_is_the_compilers() {
    let prefix = fake_prefix("exit-status");
    let compiler = recorder(&prefix);
    let output = run(wrapper(prefix.join("bin/mpicc"))
        .env("MPICH_CC", &compiler)
        .env("RECORD_EXIT", "7")
        .arg("x.c"));
    assert_eq!(output.status.code(), Some(7));

    let output = run(wrapper(prefix.join("bin/mpicc"))
        .env("MPICH_CC", prefix.join("no-such-compiler"))
        .arg("x.c"));
    assert_eq!(output.status.code(), Some(127));
    assert!(
        stderr(&output).contains("MPICH_CC"),
        "message should say how to pick a compiler: {}",
        stderr(&output)
    );
    fs::remove_dir_all(&prefix).ok();
}

#[test]
fn info_options_print_commands_and_flags() {
    let prefix = fake_prefix("info");
    let mpicc = prefix.join("bin/mpicc");
    let compile = prefix_flags(&prefix, false);
    let link = prefix_flags(&prefix, true);

    let output = run(wrapper(&mpicc).args(["-compile-info", "x.c"]));
    assert_eq!(stdout(&output), format!("cc x.c {}", compile.join(" ")));
    let output = run(wrapper(&mpicc).args(["-link-info", "x.o"]));
    assert_eq!(stdout(&output), format!("cc x.o {}", link.join(" ")));
    let output = run(wrapper(&mpicc).arg("-show-compile-info"));
    assert_eq!(stdout(&output), compile.join(" "));
    let output = run(wrapper(&mpicc).arg("-show-link-info"));
    assert_eq!(stdout(&output), link[1..].join(" "));
    fs::remove_dir_all(&prefix).ok();
}

#[test]
fn v_prints_our_version_then_asks_the_compiler() {
    let prefix = fake_prefix("version");
    let compiler = recorder(&prefix);
    let output = run(wrapper(prefix.join("bin/mpicc"))
        .env("MPICH_CC", &compiler)
        .arg("-v"));
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("mpicc for "),
        "no version line: {}",
        stdout(&output)
    );
    let expected = std::iter::once("-v".to_owned()).chain(prefix_flags(&prefix, false));
    assert_eq!(recorded_args(&prefix), expected.collect::<Vec<_>>());
    fs::remove_dir_all(&prefix).ok();
}

#[test]
fn missing_library_is_reported_and_nothing_runs() {
    let dir = scratch("no-library");
    fs::copy(MPICC, dir.join("mpicc")).expect("copy mpicc");
    let compiler = recorder(&dir);
    let output = run(wrapper(dir.join("mpicc"))
        .env("MPICH_CC", &compiler)
        .args(["-o", "x", "x.c"]));
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("libmpi.so") && message.contains("cargo build --release"),
        "unhelpful: {message}"
    );
    assert!(
        !dir.join("args").exists(),
        "the compiler ran although the library is missing"
    );
    fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_arguments_is_an_error() {
    let output = run(&mut wrapper(MPICC));
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("-help"));
}

/// A build directory with real wrappers, stand-ins for the other outputs, and a header
/// directory. Returns (build dir, include dir).
fn fake_build(root: &Path) -> (PathBuf, PathBuf) {
    let build = root.join("build");
    let include = root.join("include");
    fs::create_dir_all(&build).unwrap();
    fs::create_dir_all(&include).unwrap();
    fs::copy(MPICC, build.join("mpicc")).unwrap();
    fs::copy(MPICXX, build.join("mpicxx")).unwrap();
    write_executable(&build.join("mpirun"), "#!/bin/sh\nexit 0\n");
    symlink("mpirun", build.join("mpiexec")).unwrap();
    fs::write(build.join("libmpi.so"), "dummy library").unwrap();
    fs::write(include.join("mpi.h"), "/* dummy */\n").unwrap();
    fs::write(include.join("fm.h"), "/* dummy */\n").unwrap();
    (build, include)
}

#[test]
fn install_lays_out_the_prefix_and_the_installed_wrapper_uses_it() {
    let root = scratch("install");
    let (build, include) = fake_build(&root);
    let prefix = root.join("prefix");
    let install = |prefix: &Path| {
        run(Command::new(MPI_INSTALL)
            .arg("--prefix")
            .arg(prefix)
            .arg("--build-dir")
            .arg(&build)
            .arg("--include-dir")
            .arg(&include))
    };
    let output = install(&prefix);
    assert!(
        output.status.success(),
        "mpi-install failed: {}",
        stderr(&output)
    );
    for file in [
        "bin/mpicc",
        "bin/mpicxx",
        "bin/mpirun",
        "lib/libmpi.so",
        "include/mpi.h",
        "include/fm.h",
    ] {
        assert!(prefix.join(file).is_file(), "{file} not installed");
        assert!(
            stdout(&output).contains(file),
            "{file} not reported: {}",
            stdout(&output)
        );
    }
    assert!(
        !prefix.join("include/bip.h").exists(),
        "installed a header the build lacks"
    );
    assert_eq!(
        fs::read_link(prefix.join("bin/mpiexec")).unwrap(),
        Path::new("mpirun")
    );
    for alias in ["libmpi.so.12", "libmpich.so.12", "libmpich.so"] {
        assert_eq!(
            fs::read_link(prefix.join("lib").join(alias)).unwrap(),
            Path::new("libmpi.so"),
            "{alias}"
        );
    }

    // The installed wrapper finds the prefix, not the build or the source tree.
    fs::remove_dir_all(&build).unwrap();
    let output = run(wrapper(prefix.join("bin/mpicc")).arg("-show"));
    assert!(output.status.success(), "{}", stderr(&output));
    let expected = std::iter::once("cc".to_owned()).chain(prefix_flags(&prefix, true));
    assert_eq!(stdout(&output), expected.collect::<Vec<_>>().join(" "));

    fs::remove_dir_all(&root).ok();
}

#[test]
fn install_is_repeatable() {
    let root = scratch("reinstall");
    let (build, include) = fake_build(&root);
    let prefix = root.join("prefix");
    for round in 0..2 {
        let output = run(Command::new(MPI_INSTALL)
            .arg("--prefix")
            .arg(&prefix)
            .arg("--build-dir")
            .arg(&build)
            .arg("--include-dir")
            .arg(&include));
        assert!(
            output.status.success(),
            "round {round}: {}",
            stderr(&output)
        );
    }
    fs::remove_dir_all(&root).ok();
}

#[test]
fn install_refuses_an_incomplete_build() {
    let root = scratch("install-incomplete");
    let (build, include) = fake_build(&root);
    fs::remove_file(build.join("mpirun")).unwrap();
    fs::remove_file(build.join("libmpi.so")).unwrap();
    let prefix = root.join("prefix");
    let output = run(Command::new(MPI_INSTALL)
        .arg("--prefix")
        .arg(&prefix)
        .arg("--build-dir")
        .arg(&build)
        .arg("--include-dir")
        .arg(&include));
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    for word in ["mpirun", "libmpi.so", "cargo build --release"] {
        assert!(message.contains(word), "message lacks {word}: {message}");
    }
    assert!(!prefix.exists(), "an incomplete build must install nothing");
    fs::remove_dir_all(&root).ok();
}

/// The rpath mechanism on its own, independent of the real library: a stand-in `libmpi.so`
/// (soname `libmpi.so.12`, as the real one) built with the system compiler in an installed
/// layout; a program built by that prefix's mpicc runs without `LD_LIBRARY_PATH`.
#[test]
fn stand_in_library_is_found_by_rpath() {
    let prefix = fake_prefix("rpath");
    fs::write(
        prefix.join("include/mpi.h"),
        "int MPI_Init(int *argc, char ***argv);\n",
    )
    .unwrap();
    fs::write(
        prefix.join("stub.c"),
        "int MPI_Init(int *c, char ***v) { (void)c; (void)v; return 42; }\n",
    )
    .unwrap();
    let library = prefix.join("lib/libmpi.so");
    let output = run(Command::new("cc")
        .args(["-shared", "-fPIC", "-Wl,-soname,libmpi.so.12", "-o"])
        .arg(&library)
        .arg(prefix.join("stub.c")));
    assert!(
        output.status.success(),
        "cannot build the stand-in library: {}",
        stderr(&output)
    );
    symlink("libmpi.so", prefix.join("lib/libmpi.so.12")).unwrap();
    let program = "#include <mpi.h>\nint main(int c, char **v) { return MPI_Init(&c, &v); }\n";
    fs::write(prefix.join("main.c"), program).unwrap();

    let output = run(wrapper(prefix.join("bin/mpicc"))
        .current_dir(&prefix)
        .args(["-o", "main", "main.c"]));
    assert!(output.status.success(), "mpicc failed: {}", stderr(&output));
    let output = run(Command::new(prefix.join("main")).env_remove("LD_LIBRARY_PATH"));
    assert_eq!(
        output.status.code(),
        Some(42),
        "the program did not run on the stand-in: {}",
        stderr(&output)
    );
    fs::remove_dir_all(&prefix).ok();
}

/// Compiles the header with both wrappers, compile only: needs the header, not the library.
#[test]
fn real_header_compiles_as_c_and_cxx() {
    if !source_header().is_file() {
        println!(
            "note: skipped, {} does not exist yet",
            source_header().display()
        );
        return;
    }
    let dir = scratch("header");
    fs::write(dir.join("hello.c"), HELLO_C).unwrap();
    fs::write(dir.join("hello.cc"), HELLO_C).unwrap();
    let output = run(wrapper(build_dir().join("mpicc"))
        .current_dir(&dir)
        .args(["-Wall", "-c", "hello.c"]));
    assert!(
        output.status.success(),
        "mpicc -c failed: {}",
        stderr(&output)
    );
    let output = run(wrapper(build_dir().join("mpicxx"))
        .current_dir(&dir)
        .args(["-Wall", "-c", "hello.cc"]));
    assert!(
        output.status.success(),
        "mpicxx -c failed: {}",
        stderr(&output)
    );
    fs::remove_dir_all(&dir).ok();
}

/// Builds a real MPI program in place, checks that it finds the library through its rpath,
/// and runs it with mpirun when mpirun is built.
#[test]
fn real_program_links_and_finds_the_library_without_ld_library_path() {
    if !source_header().is_file() || !library_defines("MPI_Init") {
        println!(
            "note: skipped, the real mpi.h and a libmpi.so that defines MPI_Init are not built yet"
        );
        return;
    }
    let dir = scratch("link");
    fs::write(dir.join("hello.c"), HELLO_C).unwrap();
    let output = run(wrapper(build_dir().join("mpicc"))
        .current_dir(&dir)
        .args(["-o", "hello", "hello.c"]));
    assert!(output.status.success(), "mpicc failed: {}", stderr(&output));

    let output = run(Command::new("ldd")
        .arg(dir.join("hello"))
        .env_remove("LD_LIBRARY_PATH"));
    let resolved = stdout(&output);
    let library = build_dir().canonicalize().unwrap().join("libmpi.so.12");
    assert!(
        resolved.contains(&format!("libmpi.so.12 => {}", library.display())),
        "hello does not resolve libmpi.so.12 to {} by rpath:\n{resolved}",
        library.display()
    );

    let mpirun = build_dir().join("mpirun");
    if !mpirun.is_file() {
        println!("note: not run, {} is not built yet", mpirun.display());
    } else {
        let mut child = Command::new(&mpirun)
            .args(["-n", "2"])
            .arg(dir.join("hello"))
            .env_remove("LD_LIBRARY_PATH")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mpirun");
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().expect("poll mpirun").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("mpirun -n 2 hello did not finish within 10 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "mpirun -n 2 hello failed: {}",
            stderr(&output)
        );
        let text = stdout(&output);
        assert!(
            text.contains("rank 0 of 2") && text.contains("rank 1 of 2"),
            "unexpected output:\n{text}"
        );
    }
    fs::remove_dir_all(&dir).ok();
}

/// Installs the real build (when mpirun and the header exist) and compiles with the installed
/// wrapper, which must not refer to the source tree or the build.
#[test]
fn real_build_installs_and_installed_mpicc_works() {
    let outputs = ["mpirun", "mpiexec", "libmpi.so"].map(|name| build_dir().join(name));
    if !source_header().is_file() || outputs.iter().any(|path| !path.is_file()) {
        println!("note: skipped, the build lacks mpi.h, mpirun, mpiexec or libmpi.so so far");
        return;
    }
    let root = scratch("real-install");
    let prefix = root.join("prefix");
    let output = run(Command::new(build_dir().join("mpi-install"))
        .arg("--prefix")
        .arg(&prefix));
    assert!(
        output.status.success(),
        "mpi-install failed: {}",
        stderr(&output)
    );

    let output = run(wrapper(prefix.join("bin/mpicc")).arg("-show"));
    let expected = std::iter::once("cc".to_owned()).chain(prefix_flags(&prefix, true));
    assert_eq!(stdout(&output), expected.collect::<Vec<_>>().join(" "));

    if library_defines("MPI_Init") {
        fs::write(root.join("hello.c"), HELLO_C).unwrap();
        let output = run(wrapper(prefix.join("bin/mpicc"))
            .current_dir(&root)
            .args(["-o", "hello", "hello.c"]));
        assert!(
            output.status.success(),
            "installed mpicc failed: {}",
            stderr(&output)
        );
        let output = run(Command::new("ldd")
            .arg(root.join("hello"))
            .env_remove("LD_LIBRARY_PATH"));
        let expected = format!("libmpi.so.12 => {}/lib/libmpi.so.12", prefix.display());
        assert!(
            stdout(&output).contains(&expected),
            "not linked to the prefix:\n{}",
            stdout(&output)
        );
    }
    fs::remove_dir_all(&root).ok();
}
