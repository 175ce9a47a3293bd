//! The `main` of `mpicc`, `mpicxx` and the Fortran wrappers: parse the command line, find the headers and library,
//! then either print the command (`-show` and friends) or become the compiler.
//!
//! Running the compiler replaces the wrapper's process (`exec`), so the exit status, signals
//! and standard streams are the compiler's own with nothing in between.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use super::command::{
    assemble, compile_flags, compiler_words, fortran_flags, link_flags, shell_line,
};
use super::error::WrapperError;
use super::language::Language;
use super::layout::{executable_dir, find_fortran_include_dir, find_include_dir, find_lib_dir};
use super::options::{self, Mode, Options};

/// Set in the compiler's environment; finding it on entry means the compiler variable points
/// back at a wrapper, which would otherwise recurse forever.
const RECURSION_GUARD: &str = "MPI_WRAPPER_RECURSION_CHECK";

/// Runs the wrapper for `language` with the process's arguments; returns only on failure or
/// when nothing had to run.
pub fn main(language: Language) -> ExitCode {
    match run(language, std::env::args_os().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{}: {error}", language.wrapper_name());
            ExitCode::from(error.exit_code())
        }
    }
}

fn run(language: Language, args: Vec<OsString>) -> Result<(), WrapperError> {
    let options = options::parse(language, args)?;
    if options.mode == Mode::Help {
        print_help(language);
        return Ok(());
    }
    if std::env::var_os(RECURSION_GUARD).is_some() {
        return Err(WrapperError::Recursion {
            variable: language.compiler_variable(),
        });
    }
    if options.print_version {
        println!(
            "{} for the c-abi MPI library (MPICH ABI) version {}",
            language.wrapper_name(),
            env!("CARGO_PKG_VERSION")
        );
    }

    let (mut compile, link) = wrapper_flags(language, &options)?;
    let environment_choice = std::env::var_os(language.compiler_variable())
        .map(|value| value.to_string_lossy().into_owned());
    let compiler = compiler_words(
        language,
        options.compiler_override.as_deref(),
        environment_choice.as_deref(),
    );
    if language.is_fortran() && !compile.is_empty() {
        compile.extend(fortran_flags(&compiler));
    }

    match options.mode {
        Mode::CompileFlags => println!("{}", shell_line(&compile)),
        Mode::LinkFlags => println!("{}", shell_line(&link)),
        Mode::Show | Mode::CompileInfo | Mode::LinkInfo => {
            println!(
                "{}",
                shell_line(&assemble(
                    &compiler,
                    &options.compiler_args,
                    &compile,
                    &link
                ))
            )
        }
        Mode::Run => {
            let full = assemble(&compiler, &options.compiler_args, &compile, &link);
            if options.echo {
                eprintln!("{}", shell_line(&full));
            }
            return Err(exec_compiler(language, &compiler[0], &full[1..]));
        }
        Mode::Help => unreachable!("handled above"),
    }
    Ok(())
}

/// The flags the wrapper adds for this invocation: compile flags unless only link flags were
/// asked for, link flags when the command links. Only what is needed is looked for, so
/// `mpicc -c` works before the library is built.
fn wrapper_flags(
    language: Language,
    options: &Options,
) -> Result<(Vec<OsString>, Vec<OsString>), WrapperError> {
    let (wants_compile, wants_link) = match options.mode {
        Mode::Run | Mode::Show => (true, options.links),
        Mode::CompileInfo | Mode::CompileFlags => (true, false),
        Mode::LinkInfo => (true, true),
        Mode::LinkFlags => (false, true),
        Mode::Help => (false, false),
    };
    let exe_dir = executable_dir()?;
    let compile = if wants_compile && language.is_fortran() {
        compile_flags(&find_fortran_include_dir(&exe_dir)?)
    } else if wants_compile {
        compile_flags(&find_include_dir(&exe_dir)?)
    } else {
        Vec::new()
    };
    let link = if wants_link {
        let lib_dir = find_lib_dir(&exe_dir)?;
        let profile = options.profile.clone().or_else(|| {
            std::env::var(language.profile_variable())
                .ok()
                .filter(|name| !name.trim().is_empty())
        });
        if let Some(name) = &profile {
            let present = ["so", "a"]
                .iter()
                .any(|ext| lib_dir.join(format!("lib{name}.{ext}")).is_file());
            if !present {
                return Err(WrapperError::ProfileLibraryNotFound {
                    name: name.clone(),
                    lib_dir,
                });
            }
        }
        link_flags(&lib_dir, profile.as_deref())
    } else {
        Vec::new()
    };
    Ok((compile, link))
}

/// Replaces this process with the compiler; returns only the reason it could not start.
fn exec_compiler(language: Language, program: &str, args: &[OsString]) -> WrapperError {
    let source = Command::new(program)
        .args(args)
        .env(RECURSION_GUARD, "1")
        .exec();
    WrapperError::CompilerNotRunnable {
        compiler: program.to_owned(),
        language: language.description(),
        variable: language.compiler_variable(),
        hint: language.install_hint(),
        source,
    }
}

fn print_help(language: Language) {
    let name = language.wrapper_name();
    let variable = language.compiler_variable();
    let option = language.compiler_option();
    let default = language.default_compiler();
    let profile_variable = language.profile_variable();
    println!(
        "\
Usage: {name} [options] <compiler arguments>

Runs the {lang} compiler with the flags an MPI program needs: -I for {header}, and, when linking,
-L, -Wl,-rpath and -lmpi, so the program runs without LD_LIBRARY_PATH. All other arguments go
to the compiler unchanged and in order; the exit status is the compiler's.

Options of {name} itself:
    -show               print the command that would run; run nothing
    -compile-info       print the command without the link flags; run nothing
    -link-info          print the command with the link flags; run nothing
    -show-compile-info  print only the flags {name} adds for compiling
    -show-link-info     print only the flags {name} adds for linking
    {option}xxx           use the compiler xxx (default: ${variable}, else {default})
    -profile=NAME       link the profiling library libNAME ahead of the MPI library
                        (default: ${profile_variable})
    -echo               print the command on stderr before running it
    -v                  print {name}'s version, then pass -v to the compiler
    -help               print this help",
        lang = language.description(),
        header = language.header(),
    );
}
