//! Build-time half of the Fortran binding: `mpif.h`, the `mpi` module and the Fortran entry
//! points, all derived from `mpi.h` so that nothing can drift from it.
//!
//! Included by `build.rs` (`#[path]`), run after bindgen:
//!
//! ```text
//!   mpi.h ──bindgen──▶ mpi_h.rs ──┬─ integer constants ──▶ mpif.h ──gfortran──▶ mpi.mod
//!                                 └─ prototypes ─┐
//!   src/**/*.rs ── implemented MPI_X / PMPI_X ───┴─▶ fortran_entry_points.rs (mpi_x_, pmpi_x_)
//! ```
//!
//! - **Constants.** Every integer constant of `mpi.h` is written to `mpif.h` as an `INTEGER` with
//!   a `PARAMETER`, plus the Fortran-only ones (`MPI_STATUS_SIZE`, the 1-based status indexes,
//!   the `KIND` constants), the sentinels in MPICH's common blocks (`MPIPRIV1`, ...), whose
//!   addresses the library recognises, and the `EXTERNAL` functions. As in MPICH, predefined
//!   attribute keyvals are one above C's and string maxima one below (no NUL in Fortran). Lines start in column 8
//!   and stay within column 72 with no continuation lines, so the file is valid fixed form and
//!   free form alike (MPICH's style).
//! - **The `mpi` module** is `mpi_module.f90` (`include 'mpif.h'` and the explicit interfaces
//!   of the procedures without choice buffers, `mpi_interfaces.h`, which `generate_f08.rs`
//!   writes first), compiled with gfortran when it exists; without gfortran the build only
//!   warns.
//! - **Entry points.** For every C function that the library implements (`MPI_X / PMPI_X`
//!   as given to `mpi_fn!` and the macros built on it, in `src/` outside `src/fortran/`) and whose parameters follow the rules below, a Rust
//!   wrapper `mpi_x_` (calling `MPI_X`, so C profilers see Fortran calls) and `pmpi_x_`
//!   (calling `PMPI_X`) is generated. Functions listed in [`HAND_WRITTEN`] are in
//!   `src/fortran/special.rs`, `keyval.rs` and `file.rs` instead; they are gated with `#[cfg(mpi_has = "MPI_X")]`, which this
//!   script sets for every implemented function.
//!
//! Parameter rules (gfortran passes everything by reference, hidden `size_t` lengths of the
//! character arguments last):
//!
//! | C parameter                 | Fortran passes                    | wrapper does               |
//! |-----------------------------|-----------------------------------|----------------------------|
//! | `int`, handle, `MPI_Aint`   | pointer to the value              | reads it                   |
//! | `void *` buffer             | the buffer, or a sentinel         | maps `MPI_BOTTOM`/`MPI_IN_PLACE` |
//! | `MPI_Status *`              | `INTEGER(MPI_STATUS_SIZE)` array  | maps `MPI_STATUS(ES)_IGNORE` |
//! | `int *...weights`           | the array, or a sentinel          | maps `MPI_UNWEIGHTED`/`MPI_WEIGHTS_EMPTY` |
//! | `const char *`              | blank-padded text + hidden length | copies to a C string       |
//! | `char *` (output)           | buffer + hidden length            | copies back, blank-padded  |
//! | `MPI_File`                  | `INTEGER` file number             | `MPI_File_f2c`             |
//! | `MPI_File *`                | `INTEGER` file number (in-out)    | `f2c` before, `c2f` after  |
//! | `MPI_File *` of `_open`     | `INTEGER` file number (out)       | `c2f` after                |
//! | `MPI_Offset`, `MPI_Offset *`| `INTEGER(KIND=MPI_OFFSET_KIND)`   | reads it / passes through  |
//! | other pointers, arrays      | the same                          | passes through             |
//! | handler / op callback       | the procedure                     | passes through (same ABI)  |
//!
//! **Files.** In MPICH's ABI a C `MPI_File` is a pointer, so a Fortran file handle is not the
//! C handle: it is the file's small number (`MPI_File_c2f`, 0 = `MPI_FILE_NULL`), converted
//! on the way in with `MPI_File_f2c` (an unknown number becomes `MPI_FILE_NULL`, which the C
//! function reports as `MPI_ERR_FILE`). An `MPI_File *` is converted both ways: the Fortran
//! number in (`MPI_File_close`), or `MPI_FILE_NULL` for a pure output (`MPI_File_open`, see
//! [`FILE_OUTPUTS`]), and the C handle's number written back after the call (0 after a close
//! or a failed open, as `MPI_FILE_NULL` is 0 in Fortran).
//! `MPI_Offset` is a C `long`, the same 8 bytes as `INTEGER(KIND=MPI_OFFSET_KIND)`, so the
//! value rule and pass-through serve it. File error handlers receive a file handle, so theirs
//! is hand-written (`src/fortran/file.rs`: the Fortran procedure gets the Fortran number), and
//! so is `MPI_Register_datarep`, whose Fortran conversion functions take every argument by
//! reference and return their error in `IERROR` (C trampolines call them).

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Functions whose Fortran binding is written by hand in `src/fortran/` (`special.rs`,
/// `keyval.rs`, `file.rs`, `spawn.rs`).
pub const HAND_WRITTEN: &[&str] = &[
    "MPI_Init",
    "MPI_Init_thread",
    "MPI_Info_create_env",
    "MPI_Pcontrol",
    "MPI_Type_hvector",
    "MPI_Type_hindexed",
    "MPI_Type_struct",
    "MPI_Address",
    "MPI_Type_extent",
    "MPI_Type_lb",
    "MPI_Type_ub",
    "MPI_Buffer_detach",
    "MPI_Attr_put",
    "MPI_Attr_get",
    "MPI_Comm_set_attr",
    "MPI_Comm_get_attr",
    "MPI_Type_set_attr",
    "MPI_Type_get_attr",
    "MPI_Win_set_attr",
    "MPI_Win_get_attr",
    "MPI_Keyval_create",
    "MPI_Comm_create_keyval",
    "MPI_Type_create_keyval",
    "MPI_Win_create_keyval",
    "MPI_File_create_errhandler",
    "MPI_Register_datarep",
    "MPI_Register_datarep_c",
    "MPI_Grequest_start",
    "MPI_Comm_spawn",
    "MPI_Comm_spawn_multiple",
];

/// Callback types whose Fortran procedures have the C function's ABI (all arguments by
/// reference, no return value): the procedure's address is passed on as it is.
const PASS_THROUGH_CALLBACKS: &[&str] = &[
    "MPI_User_function",
    "MPI_User_function_c",
    "MPI_Comm_errhandler_function",
    "MPI_Comm_errhandler_fn",
    "MPI_Handler_function",
    "MPI_Win_errhandler_function",
    "MPI_Session_errhandler_function",
];

/// Runs every step; `src_dir` is the crate's `src/`, `fortran_dir` its `fortran/`.
pub fn run(bindings: &str, src_dir: &Path, fortran_dir: &Path, out_dir: &Path) {
    let implemented = implemented_functions(src_dir);
    for name in &implemented {
        println!("cargo:rustc-cfg=mpi_has=\"{name}\"");
    }
    println!("cargo::rustc-check-cfg=cfg(mpi_has, values(any()))");

    let functions = parse_functions(bindings);
    let constants = parse_constants(bindings);
    let mut code = entry_points(&functions, &implemented);
    let keyvals: Vec<String> = constants
        .iter()
        .filter(|(n, _)| PREDEFINED_KEYVALS.contains(&n.as_str()))
        .map(|(n, v)| format!("{v} /* {n} */"))
        .collect();
    writeln!(
        code,
        "\n/// The C values of the predefined keyvals (Fortran's are one more)."
    )
    .unwrap();
    writeln!(
        code,
        "pub(crate) const PREDEFINED_KEYVALS: &[c_int] = &[{}];",
        keyvals.join(", ")
    )
    .unwrap();
    std::fs::write(out_dir.join("fortran_entry_points.rs"), code)
        .expect("could not write the Fortran entry points to OUT_DIR");

    let include = out_dir.join("fortran");
    std::fs::create_dir_all(&include).expect("could not create OUT_DIR/fortran");
    let mpif = mpif_h(&constants);
    write_if_changed(&include.join("mpif.h"), &mpif);
    compile_module(&fortran_dir.join("mpi_module.f90"), &include);
}

/// Writes `text` unless the file already holds it (keeps gfortran's timestamps quiet).
pub(crate) fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("could not write {path:?}: {e}"));
    }
}

// ---- What the library implements -------------------------------------------------------

/// Every `MPI_X` defined under `src_dir` (outside the Fortran module itself): the pair
/// `MPI_X / PMPI_X` that `mpi_fn!` and the macros built on it are given, and any `fn MPI_X`,
/// outside comments.
pub(crate) fn implemented_functions(src_dir: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(src_dir, &mut files);
    let mut names = BTreeSet::new();
    for file in files {
        if file.components().any(|c| c.as_os_str() == "fortran") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let words: Vec<&str> = code
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '/'))
            .flat_map(split_slash)
            .filter(|w| !w.is_empty())
            .collect();
        for w in words.windows(3) {
            if w[0].starts_with("MPI_") && w[1] == "/" && w[2].strip_prefix('P') == Some(w[0]) {
                names.insert(w[0].to_owned());
            }
        }
        // The few written as plain exported functions (`pub extern "C" fn MPI_Pcontrol`).
        for w in words.windows(2) {
            if w[0] == "fn" && w[1].starts_with("MPI_") {
                names.insert(w[1].to_owned());
            }
        }
    }
    names
}

/// Splits `a/b` into `a`, `/`, `b` (the slash of `fn MPI_X / PMPI_X` may touch the names).
fn split_slash(word: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = word;
    while let Some(i) = rest.find('/') {
        parts.push(&rest[..i]);
        parts.push("/");
        rest = &rest[i + 1..];
    }
    parts.push(rest);
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

// ---- Reading bindgen's output ---------------------------------------------------------

/// A prototype as bindgen wrote it: Rust types as text.
pub struct Function {
    pub name: String,
    pub params: Vec<(String, String)>,
    pub variadic: bool,
    pub ret: String,
}

/// The `pub fn` declarations of the bindings.
pub(crate) fn parse_functions(bindings: &str) -> Vec<Function> {
    let mut functions = Vec::new();
    let mut rest = bindings;
    while let Some(start) = rest.find("pub fn ") {
        rest = &rest[start + "pub fn ".len()..];
        // The `;` that ends the declaration, not one of an array type (`*mut [c_int; 3usize]`).
        let mut brackets = 0i32;
        let Some(end) = rest.find(|c: char| {
            match c {
                '[' => brackets += 1,
                ']' => brackets -= 1,
                _ => {}
            }
            c == ';' && brackets == 0
        }) else {
            break;
        };
        let decl = &rest[..end];
        rest = &rest[end..];
        let Some(open) = decl.find('(') else { continue };
        let Some(close) = decl.rfind(')') else {
            continue;
        };
        let name = decl[..open].trim().to_owned();
        let ret = decl[close + 1..]
            .trim()
            .strip_prefix("->")
            .map(|r| r.trim().to_owned())
            .unwrap_or_default();
        let mut params = Vec::new();
        let mut variadic = false;
        for p in split_top(&decl[open + 1..close]) {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            if p == "..." {
                variadic = true;
                continue;
            }
            let Some((n, t)) = p.split_once(':') else {
                continue;
            };
            params.push((n.trim().to_owned(), normalize(t)));
        }
        functions.push(Function {
            name,
            params,
            variadic,
            ret: normalize(&ret),
        });
    }
    functions
}

/// Splits at the commas outside `<>`/`()`.
fn split_top(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// A type with `::std::os::raw::` dropped and spaces collapsed (`*mut c_int`).
fn normalize(t: &str) -> String {
    t.replace("::std::os::raw::", "")
        .replace("std::os::raw::", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The integer constants `pub const MPI_X: c_int = N;`, in header order.
pub(crate) fn parse_constants(bindings: &str) -> Vec<(String, i64)> {
    bindings
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("pub const ")?;
            let (name, rest) = rest.split_once(':')?;
            let value = rest.split_once('=')?.1.trim().strip_suffix(';')?;
            let name = name.trim();
            if !(name.starts_with("MPI_") || name.starts_with("MPIX_")) {
                return None;
            }
            Some((name.to_owned(), value.parse::<i64>().ok()?))
        })
        .collect()
}

// ---- mpif.h -------------------------------------------------------------------------------

/// Constants Fortran has that C has not (or has with another meaning), MPICH's values.
pub(crate) const FORTRAN_ONLY: &[(&str, i64)] = &[
    ("MPI_STATUS_SIZE", 5),
    ("MPI_SOURCE", 3),
    ("MPI_TAG", 4),
    ("MPI_ERROR", 5),
    ("MPI_ADDRESS_KIND", 8),
    ("MPI_OFFSET_KIND", 8),
    ("MPI_COUNT_KIND", 8),
    ("MPI_INTEGER_KIND", 4),
    // A pointer-valued macro in C (`(MPI_File)0`), which bindgen leaves out.
    ("MPI_FILE_NULL", 0),
];

/// Constants whose Fortran type is `INTEGER(KIND=MPI_OFFSET_KIND)` (MPICH's `integer*8`):
/// a program passes them where an offset is read, 8 bytes.
pub(crate) const OFFSET_CONSTANTS: &[&str] = &["MPI_DISPLACEMENT_CURRENT"];

/// The predefined attribute keyvals. As in MPICH, the Fortran value is the C value + 1, so
/// that the library knows the caller wants the attribute's value rather than a pointer to it.
pub const PREDEFINED_KEYVALS: &[&str] = &[
    "MPI_TAG_UB",
    "MPI_HOST",
    "MPI_IO",
    "MPI_WTIME_IS_GLOBAL",
    "MPI_UNIVERSE_SIZE",
    "MPI_LASTUSEDCODE",
    "MPI_APPNUM",
    "MPI_WIN_BASE",
    "MPI_WIN_SIZE",
    "MPI_WIN_DISP_UNIT",
    "MPI_WIN_CREATE_FLAVOR",
    "MPI_WIN_MODEL",
];

/// The string-length maxima. C counts the terminating NUL, Fortran strings have none: as in
/// MPICH, the Fortran value is the C value - 1.
pub(crate) const STRING_MAXIMA: &[&str] = &[
    "MPI_MAX_PROCESSOR_NAME",
    "MPI_MAX_LIBRARY_VERSION_STRING",
    "MPI_MAX_ERROR_STRING",
    "MPI_MAX_PORT_NAME",
    "MPI_MAX_OBJECT_NAME",
    "MPI_MAX_INFO_KEY",
    "MPI_MAX_INFO_VAL",
    "MPI_MAX_DATAREP_STRING",
];

/// The text of `mpif.h`.
fn mpif_h(constants: &[(String, i64)]) -> String {
    let mut text = String::new();
    let line = |text: &mut String, l: &str| {
        assert!(l.len() <= 72, "mpif.h line longer than 72 columns: {l}");
        text.push_str(l);
        text.push('\n');
    };
    for l in [
        "!     mpif.h: the MPI constants for Fortran 77 and Fortran 90.",
        "!     Generated from mpi.h by c-abi/build.rs; do not edit.",
        "!     Fixed and free form: statements in columns 8-72.",
    ] {
        line(&mut text, l);
    }
    let mut seen = HashSet::new();
    let fortran_only = FORTRAN_ONLY.iter().map(|(n, v)| (n.to_string(), *v));
    for (name, value) in fortran_only.chain(constants.iter().cloned()) {
        if !seen.insert(name.to_ascii_uppercase()) {
            continue;
        }
        let value = if PREDEFINED_KEYVALS.contains(&name.as_str()) {
            value + 1
        } else if STRING_MAXIMA.contains(&name.as_str()) {
            value - 1
        } else {
            value
        };
        let kind = if OFFSET_CONSTANTS.contains(&name.as_str()) {
            "INTEGER(KIND=MPI_OFFSET_KIND)"
        } else {
            "INTEGER"
        };
        line(&mut text, &format!("       {kind} {name}"));
        line(&mut text, &format!("       PARAMETER ({name}={value})"));
    }
    for l in [
        "       INTEGER MPI_STATUS_IGNORE(MPI_STATUS_SIZE)",
        "       INTEGER MPI_STATUSES_IGNORE(MPI_STATUS_SIZE,1)",
        "       INTEGER MPI_ERRCODES_IGNORE(1)",
        "       CHARACTER*1 MPI_ARGVS_NULL(1,1)",
        "       CHARACTER*1 MPI_ARGV_NULL(1)",
        "       INTEGER MPI_BOTTOM, MPI_IN_PLACE, MPI_UNWEIGHTED",
        "       INTEGER MPI_WEIGHTS_EMPTY",
        "       COMMON /MPIFCMB5/ MPI_UNWEIGHTED",
        "       COMMON /MPIFCMB9/ MPI_WEIGHTS_EMPTY",
        "       SAVE /MPIFCMB5/",
        "       SAVE /MPIFCMB9/",
        "       COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE",
        "       COMMON /MPIPRIV2/ MPI_STATUSES_IGNORE, MPI_ERRCODES_IGNORE",
        "       SAVE /MPIPRIV1/,/MPIPRIV2/",
        "       COMMON /MPIPRIVC/ MPI_ARGVS_NULL, MPI_ARGV_NULL",
        "       SAVE /MPIPRIVC/",
        "       EXTERNAL MPI_DUP_FN, MPI_NULL_DELETE_FN, MPI_NULL_COPY_FN",
        "       EXTERNAL MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN",
        "       EXTERNAL MPI_COMM_NULL_COPY_FN",
        "       EXTERNAL MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN",
        "       EXTERNAL MPI_TYPE_NULL_COPY_FN",
        "       EXTERNAL MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL_C",
        "       EXTERNAL MPI_WTIME, MPI_WTICK",
        "       EXTERNAL PMPI_WTIME, PMPI_WTICK",
        "       DOUBLE PRECISION MPI_WTIME, MPI_WTICK",
        "       DOUBLE PRECISION PMPI_WTIME, PMPI_WTICK",
    ] {
        line(&mut text, l);
    }
    text
}

/// Compiles the `mpi` module into `include/mpi.mod` with gfortran (`$FC` if set). Without a
/// Fortran compiler, or if it fails, the build goes on with a warning (the C library does not
/// need the module), and no stale `mpi.mod` is left behind.
fn compile_module(source: &Path, include: &Path) {
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-env-changed=FC");
    let fc = std::env::var("FC")
        .ok()
        .filter(|f| !f.trim().is_empty())
        .unwrap_or_else(|| "gfortran".into());
    let module = include.join("mpi.mod");
    let _ = std::fs::remove_file(&module);
    let object = include.join("mpi_module.o");
    let result = Command::new(&fc)
        .arg("-c")
        .arg(source)
        .arg("-I")
        .arg(include)
        .arg("-J")
        .arg(include)
        .arg("-o")
        .arg(&object)
        .output();
    let _ = std::fs::remove_file(&object);
    match result {
        Ok(out) if out.status.success() && module.is_file() => {}
        Ok(out) => println!(
            "cargo:warning={fc} could not compile {} into mpi.mod: {}",
            source.display(),
            String::from_utf8_lossy(&out.stderr).replace('\n', " ")
        ),
        Err(e) => println!(
            "cargo:warning=no Fortran compiler ({fc}: {e}): mpi.mod not built, mpif.h is. \
             Install gfortran (Debian: apt-get install gfortran) for `use mpi` and mpifort"
        ),
    }
}

// ---- The entry points ---------------------------------------------------------------------

/// How one C parameter is received from Fortran and handed to C.
pub(crate) enum Param {
    /// Read from the reference.
    Value(String),
    /// A buffer: sentinels translated.
    Buffer(String),
    /// A status or array of statuses: `MPI_STATUS(ES)_IGNORE` translated.
    Status(String),
    /// An array of weights: `MPI_UNWEIGHTED`/`MPI_WEIGHTS_EMPTY` translated.
    Weights(String),
    /// An input string with its hidden length.
    InString,
    /// An output string with its hidden length.
    OutString,
    /// A file (`MPI_File`): the Fortran number converted with `MPI_File_f2c`.
    FileIn,
    /// A file's address (`MPI_File *`): converted in with `MPI_File_f2c` and the result back
    /// with `MPI_File_c2f`.
    FileInOut,
    /// A new file's address (`MPI_File *` of [`FILE_OUTPUTS`]): `MPI_FILE_NULL` in, the
    /// result back with `MPI_File_c2f` (so `MPI_FILE_NULL` after a failure).
    FileOut,
    /// Passed on as it is.
    Through(String),
}

/// The functions whose `MPI_File *` is an output only: the program's variable is not read.
const FILE_OUTPUTS: &[&str] = &["MPI_File_open"];

/// Why a function gets no generated wrapper, if it gets none.
pub(crate) fn classify(f: &Function) -> Result<Vec<Param>, String> {
    if f.variadic {
        return Err("variadic".into());
    }
    let mut params = Vec::new();
    for (name, ty) in &f.params {
        let p = if let Some(target) = ty
            .strip_prefix("*const ")
            .or_else(|| ty.strip_prefix("*mut "))
        {
            match target {
                "c_void" => Param::Buffer(ty.clone()),
                "MPI_Status" => Param::Status(ty.clone()),
                "c_int" if name.ends_with("weights") => Param::Weights(ty.clone()),
                "c_char" if ty.starts_with("*const") => Param::InString,
                "c_char" => Param::OutString,
                t if t.starts_with('*') && t.contains("c_char") => {
                    return Err(format!("{name}: array of strings"))
                }
                "MPI_File" if ty.starts_with("*mut") && FILE_OUTPUTS.contains(&f.name.as_str()) => {
                    Param::FileOut
                }
                "MPI_File" if ty.starts_with("*mut") => Param::FileInOut,
                "MPI_File" | "ADIOI_FileD" => return Err(format!("{name}: {ty}")),
                _ => Param::Through(ty.clone()),
            }
        } else if ty.ends_with("_function")
            || ty.ends_with("_function_c")
            || ty.ends_with("_fn")
            || ty.starts_with("::std::option")
        {
            if PASS_THROUGH_CALLBACKS.contains(&ty.as_str()) {
                Param::Through(ty.clone())
            } else {
                return Err(format!("{name}: callback {ty}"));
            }
        } else if ty == "MPI_File" {
            Param::FileIn
        } else {
            Param::Value(ty.clone())
        };
        params.push(p);
    }
    Ok(params)
}

/// Whether `name` gets a Fortran binding at all (the large-count `_c` functions too: the
/// `mpi_f08` module makes them overloads of their int forms, see `generate_f08.rs`).
pub(crate) fn wanted(name: &str) -> bool {
    name.starts_with("MPI_")
        && !name.starts_with("MPI_T_")
        && !name.ends_with("_c2f")
        && !name.ends_with("_f2c")
        && !name.ends_with("_f082f")
        && !name.ends_with("_f2f08")
        && !name.ends_with("_f082c")
        && !name.ends_with("_c2f08")
        && !HAND_WRITTEN.contains(&name)
}

/// The Rust source of every generated entry point.
fn entry_points(functions: &[Function], implemented: &BTreeSet<String>) -> String {
    let mut code = String::from(
        "// Generated by c-abi/fortran/generate.rs from mpi.h; see src/fortran/mod.rs.\n",
    );
    let mut skipped = Vec::new();
    for f in functions {
        if !wanted(&f.name) || !implemented.contains(&f.name) {
            continue;
        }
        match classify(f) {
            Ok(params) => {
                wrapper(&mut code, f, &params, &f.name, &f.name.to_ascii_lowercase());
                let pname = format!("P{}", f.name);
                wrapper(&mut code, f, &params, &pname, &pname.to_ascii_lowercase());
            }
            Err(why) => skipped.push(format!("{} ({why})", f.name)),
        }
    }
    writeln!(code, "\n/// Implemented in C, without a Fortran binding.").unwrap();
    writeln!(
        code,
        "pub(crate) const WITHOUT_FORTRAN_BINDING: &[&str] = &{skipped:?};"
    )
    .unwrap();
    code
}

/// The Rust parameters (`name: type`) and return type (` -> T`, or empty) of the entry point
/// `mpi_x_` of `f`: what the Fortran caller passes, the arguments, `ierr`, then the hidden
/// lengths. `generate_f08.rs` forwards the specific procedures of `mpi_f08` to `mpi_x_` with
/// them.
pub(crate) fn entry_signature(f: &Function, params: &[Param]) -> (Vec<String>, String) {
    let lowered = lower(f, params);
    (lowered.args, lowered.ret)
}

/// What one entry point does with its parameters (see the table in the module doc).
struct Lowered {
    /// Fortran-side parameters (with `ierr`), then the hidden lengths.
    args: Vec<String>,
    setup: Vec<String>,
    pass: Vec<String>,
    after: Vec<String>,
    returns_code: bool,
    /// ` -> T` for a function that returns a value, else empty.
    ret: String,
}

/// The parameter rules of the module doc applied to `f`.
fn lower(f: &Function, params: &[Param]) -> Lowered {
    let returns_code = f.ret == "c_int";
    let mut args = Vec::new(); // Fortran-side parameters
    let mut hidden = Vec::new(); // hidden lengths
    let mut setup = Vec::new();
    let mut pass = Vec::new();
    let mut after = Vec::new();
    for ((name, ty), p) in f.params.iter().zip(params) {
        let a = format!("a_{name}");
        match p {
            Param::Value(t) => {
                args.push(format!("{a}: *const {t}"));
                pass.push(format!("*{a}"));
            }
            Param::Buffer(t) => {
                args.push(format!("{a}: {t}"));
                pass.push(format!("super::buffer({a} as *const c_void) as {t}"));
            }
            Param::Status(t) => {
                args.push(format!("{a}: {t}"));
                pass.push(format!("super::status({a} as *const MPI_Status) as {t}"));
            }
            Param::Weights(t) => {
                args.push(format!("{a}: {t}"));
                pass.push(format!("super::weights({a} as *const c_int) as {t}"));
            }
            Param::InString => {
                args.push(format!("{a}: *const c_char"));
                hidden.push(format!("{a}_len: usize"));
                setup.push(format!("let {a} = super::InString::new({a}, {a}_len);"));
                pass.push(format!("{a}.as_ptr()"));
            }
            Param::OutString => {
                args.push(format!("{a}: *mut c_char"));
                hidden.push(format!("{a}_len: usize"));
                setup.push(format!(
                    "let mut {a} = super::OutString::new({a}, {a}_len);"
                ));
                pass.push(format!("{a}.as_mut_ptr()"));
                after.push(format!("{a}.finish();"));
            }
            Param::FileIn => {
                args.push(format!("{a}: *const MPI_Fint"));
                pass.push(format!("crate::abi::MPI_File_f2c(*{a})"));
            }
            Param::FileInOut | Param::FileOut => {
                args.push(format!("{a}: *mut MPI_Fint"));
                let initial = if matches!(p, Param::FileOut) {
                    "std::ptr::null_mut()".to_owned()
                } else {
                    format!("if {a}.is_null() {{ std::ptr::null_mut() }} else {{ crate::abi::MPI_File_f2c(*{a}) }}")
                };
                setup.push(format!("let mut {a}_c: MPI_File = {initial};"));
                pass.push(format!(
                    "if {a}.is_null() {{ std::ptr::null_mut() }} else {{ &mut {a}_c }}"
                ));
                after.push(format!(
                    "if !{a}.is_null() {{ *{a} = crate::abi::MPI_File_c2f({a}_c); }}"
                ));
            }
            Param::Through(t) => {
                args.push(format!("{a}: {t}"));
                pass.push(a.clone());
            }
        }
        let _ = ty;
    }
    if returns_code {
        args.push("ierr: *mut MPI_Fint".into());
    }
    args.extend(hidden);
    let ret = if returns_code || f.ret.is_empty() {
        String::new()
    } else {
        format!(" -> {}", f.ret)
    };
    Lowered {
        args,
        setup,
        pass,
        after,
        returns_code,
        ret,
    }
}

/// One `extern "C"` wrapper: `fortran_name_` calling `c_name`.
fn wrapper(code: &mut String, f: &Function, params: &[Param], c_name: &str, fortran_name: &str) {
    let l = lower(f, params);
    writeln!(
        code,
        "\n/// `{}` for Fortran (`{fortran_name}`): calls `{c_name}`.",
        f.name.to_ascii_uppercase()
    )
    .unwrap();
    writeln!(
        code,
        "///\n/// # Safety\n/// gfortran's calling convention: every argument by reference."
    )
    .unwrap();
    writeln!(code, "#[no_mangle]").unwrap();
    writeln!(
        code,
        "pub unsafe extern \"C\" fn {fortran_name}_({}){} {{",
        l.args.join(", "),
        l.ret
    )
    .unwrap();
    writeln!(
        code,
        "    // SAFETY: the references come from the Fortran caller, valid for the call;"
    )
    .unwrap();
    writeln!(
        code,
        "    // the C function gets what its prototype asks for."
    )
    .unwrap();
    writeln!(code, "    unsafe {{").unwrap();
    for s in &l.setup {
        writeln!(code, "        {s}").unwrap();
    }
    writeln!(
        code,
        "        let result = crate::abi::{c_name}({});",
        l.pass.join(", ")
    )
    .unwrap();
    for s in &l.after {
        writeln!(code, "        {s}").unwrap();
    }
    if l.returns_code {
        writeln!(code, "        super::set_ierr(ierr, result);").unwrap();
    } else {
        writeln!(code, "        result").unwrap();
    }
    writeln!(code, "    }}\n}}").unwrap();
}
