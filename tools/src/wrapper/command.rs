//! The compiler command line the wrapper runs or prints.
//!
//! Layout of the command, as MPICH's wrappers do it:
//!
//! ```text
//! <compiler words> <user arguments...> -I<include dir> [-L<lib dir> -Wl,-rpath,<lib dir> [-l<profile>] -lmpi]
//! ```
//!
//! The wrapper's flags come after the user's, so a user's own `-I` wins over ours and libraries
//! the user names that call MPI come before `-lmpi` on the link line.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::path::Path;

use super::language::Language;

/// The library every MPI program links, as a linker flag.
const LINK_MPI: &str = "-lmpi";

/// The compiler to run, as words: `-cc=`/`-cxx=` first, then `$MPICH_CC`/`$MPICH_CXX`, then
/// the default. Like MPICH, a value with spaces is split into words, so `MPICH_CC="ccache gcc"`
/// and `MPICH_CC="gcc -m64"` work; a blank value counts as unset.
pub fn compiler_words(
    language: Language,
    command_line_choice: Option<&str>,
    environment_choice: Option<&str>,
) -> Vec<String> {
    [command_line_choice, environment_choice]
        .into_iter()
        .flatten()
        .map(|choice| {
            choice
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .find(|words| !words.is_empty())
        .unwrap_or_else(|| vec![language.default_compiler().to_owned()])
}

/// The flags that let the compiler find the MPI headers.
pub fn compile_flags(include_dir: &Path) -> Vec<OsString> {
    vec![prefixed("-I", include_dir)]
}

/// The flags a Fortran compiler needs for MPI programs: gfortran 10 and later reject calls of
/// one external procedure with different argument types in one file (`MPI_SEND` of an
/// `INTEGER` and of a `REAL` buffer), which every `mpif.h` program does, unless given
/// `-fallow-argument-mismatch` (MPICH's `mpifort` adds it too). Other compilers get nothing.
pub fn fortran_flags(compiler: &[String]) -> Vec<OsString> {
    let Some(program) = compiler.first() else {
        return Vec::new();
    };
    let is_gfortran = Path::new(program)
        .file_name()
        .is_some_and(|name| name.to_string_lossy().contains("gfortran"));
    if !is_gfortran {
        return Vec::new();
    }
    // `-dumpversion` prints the major version (`12`) or more (`9.4.0`).
    let major = std::process::Command::new(program)
        .args(&compiler[1..])
        .arg("-dumpversion")
        .output()
        .ok()
        .and_then(|out| {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.trim().split('.').next()?.parse::<u32>().ok()
        });
    match major {
        Some(major) if major >= 10 => vec![OsString::from("-fallow-argument-mismatch")],
        _ => Vec::new(),
    }
}

/// The flags that link the MPI library and record its directory in the program (rpath), so the
/// program runs without `LD_LIBRARY_PATH`. A profiling library (`-profile=NAME`) goes ahead of
/// `-lmpi` so its `MPI_` functions take precedence over the library's.
pub fn link_flags(lib_dir: &Path, profile: Option<&str>) -> Vec<OsString> {
    let mut flags = vec![prefixed("-L", lib_dir)];
    if lib_dir.as_os_str().to_string_lossy().contains(',') {
        // -Wl, splits its argument at commas; -Xlinker passes a path with commas intact.
        flags.extend(["-Xlinker", "-rpath", "-Xlinker"].map(OsString::from));
        flags.push(lib_dir.as_os_str().to_owned());
    } else {
        flags.push(prefixed("-Wl,-rpath,", lib_dir));
    }
    if let Some(name) = profile {
        flags.push(OsString::from(format!("-l{name}")));
    }
    flags.push(OsString::from(LINK_MPI));
    flags
}

/// `flag` immediately followed by `path`, as one argument (`-I/opt/mpi/include`).
fn prefixed(flag: &str, path: &Path) -> OsString {
    let mut argument = OsString::from(flag);
    argument.push(path.as_os_str());
    argument
}

/// The whole command: compiler words, the user's arguments, then the wrapper's flags.
pub fn assemble(
    compiler: &[String],
    user_args: &[OsString],
    compile: &[OsString],
    link: &[OsString],
) -> Vec<OsString> {
    compiler
        .iter()
        .map(OsString::from)
        .chain(user_args.iter().cloned())
        .chain(compile.iter().cloned())
        .chain(link.iter().cloned())
        .collect()
}

/// `words` as one line a POSIX shell would split back into the same words.
pub fn shell_line(words: &[OsString]) -> String {
    words
        .iter()
        .map(|word| shell_quote(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word, single-quoted when it holds anything a shell would interpret.
pub fn shell_quote(word: &OsStr) -> Cow<'_, str> {
    let text = word.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-+=/.,:@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text;
    }
    // Inside single quotes nothing is special except the quote itself, written as '\''.
    Cow::Owned(format!("'{}'", text.replace('\'', r"'\''")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(
            shell_quote(OsStr::new("-I/opt/mpi/include")),
            "-I/opt/mpi/include"
        );
        assert_eq!(shell_quote(OsStr::new("-DNAME=a b")), "'-DNAME=a b'");
        assert_eq!(shell_quote(OsStr::new("it's")), r"'it'\''s'");
        assert_eq!(shell_quote(OsStr::new("")), "''");
        assert_eq!(shell_quote(OsStr::new("$HOME")), "'$HOME'");
    }

    #[test]
    fn compiler_choice_order_and_splitting() {
        assert_eq!(compiler_words(Language::C, None, None), ["cc"]);
        assert_eq!(compiler_words(Language::Cxx, None, None), ["c++"]);
        assert_eq!(
            compiler_words(Language::C, None, Some("ccache gcc")),
            ["ccache", "gcc"]
        );
        assert_eq!(
            compiler_words(Language::C, Some("clang"), Some("gcc")),
            ["clang"]
        );
        assert_eq!(compiler_words(Language::C, None, Some("  ")), ["cc"]);
    }

    #[test]
    fn link_flags_carry_rpath_and_library() {
        let flags = link_flags(Path::new("/opt/mpi/lib"), Some("mpe"));
        assert_eq!(
            flags,
            [
                "-L/opt/mpi/lib",
                "-Wl,-rpath,/opt/mpi/lib",
                "-lmpe",
                "-lmpi"
            ]
        );
        let odd = link_flags(Path::new("/opt/a,b/lib"), None);
        assert_eq!(
            odd,
            [
                "-L/opt/a,b/lib",
                "-Xlinker",
                "-rpath",
                "-Xlinker",
                "/opt/a,b/lib",
                "-lmpi"
            ]
        );
    }
}
