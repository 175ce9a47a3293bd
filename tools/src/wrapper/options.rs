//! The wrapper's command line: a few options of its own, everything else for the compiler.
//!
//! The wrapper never rewrites or reorders the compiler's arguments; it only takes out its own
//! options (which the compiler would reject) and watches for the flags that stop the compiler
//! before the link step (`-c`, `-S`, `-E`, `-M`, `-MM`), since linking is what needs `-lmpi`.
//! Arguments are kept as `OsString`, so file names that are not UTF-8 pass through intact.

use std::ffi::OsString;

use super::error::WrapperError;
use super::language::Language;

/// What the invocation asks the wrapper to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Run the compiler (the normal case).
    Run,
    /// `-show`: print the command that would run, run nothing.
    Show,
    /// `-compile-info`: print the command without the link flags, run nothing.
    CompileInfo,
    /// `-link-info`: print the command with the link flags, run nothing.
    LinkInfo,
    /// `-show-compile-info`: print only the flags the wrapper adds for compiling.
    CompileFlags,
    /// `-show-link-info`: print only the flags the wrapper adds for linking.
    LinkFlags,
    /// `-help`: print the wrapper's options.
    Help,
}

/// A parsed wrapper command line.
#[derive(Debug)]
pub struct Options {
    /// What to do.
    pub mode: Mode,
    /// The arguments for the compiler, in the user's order, wrapper options removed.
    pub compiler_args: Vec<OsString>,
    /// False when a flag stops the compiler before the link step.
    pub links: bool,
    /// A compiler named with `-cc=` / `-cxx=`; wins over the environment.
    pub compiler_override: Option<String>,
    /// A profiling library named with `-profile=NAME`, linked as `-lNAME` ahead of `-lmpi`.
    pub profile: Option<String>,
    /// `-echo`: print the command on stderr before running it.
    pub echo: bool,
    /// `-v`: print the wrapper's version line before the compiler's.
    pub print_version: bool,
}

/// Splits `args` (without the program name) into wrapper options and compiler arguments.
pub fn parse(language: Language, args: Vec<OsString>) -> Result<Options, WrapperError> {
    if args.is_empty() {
        return Err(WrapperError::NoArguments);
    }
    let only_one_argument = args.len() == 1;
    let mut options = Options {
        mode: Mode::Run,
        compiler_args: Vec::with_capacity(args.len()),
        links: true,
        compiler_override: None,
        profile: None,
        echo: false,
        print_version: false,
    };
    for arg in args {
        // Wrapper options are all ASCII; an argument that is not UTF-8 is the compiler's.
        let Some(text) = arg.to_str() else {
            options.compiler_args.push(arg);
            continue;
        };
        match text {
            "-show" => options.mode = Mode::Show,
            "-compile-info" | "-compile_info" => options.mode = Mode::CompileInfo,
            "-link-info" | "-link_info" => options.mode = Mode::LinkInfo,
            "-show-compile-info" => options.mode = Mode::CompileFlags,
            "-show-link-info" => options.mode = Mode::LinkFlags,
            "-help" => {
                options.mode = Mode::Help;
                return Ok(options);
            }
            "-echo" => options.echo = true,
            "-static-mpi" => return Err(WrapperError::NoStaticLibrary),
            "-c" | "-S" | "-E" | "-M" | "-MM" => {
                options.links = false;
                options.compiler_args.push(arg);
            }
            "-v" => {
                // Like MPICH: announce ourselves, and still hand -v to the compiler. A lone
                // `-v` asks for versions only, so there is nothing to link.
                options.print_version = true;
                if only_one_argument {
                    options.links = false;
                }
                options.compiler_args.push(arg);
            }
            _ => {
                if let Some(compiler) = text.strip_prefix(language.compiler_option()) {
                    if compiler.trim().is_empty() {
                        return Err(WrapperError::EmptyCompilerOption {
                            option: language.compiler_option(),
                        });
                    }
                    options.compiler_override = Some(compiler.to_owned());
                } else if let Some(name) = text.strip_prefix("-profile=") {
                    options.profile = Some(name.to_owned());
                } else {
                    options.compiler_args.push(arg);
                }
            }
        }
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Options {
        parse(Language::C, args.iter().map(OsString::from).collect()).expect("valid command line")
    }

    #[test]
    fn passes_compiler_arguments_through_in_order() {
        let options = parse_strs(&["-O2", "-show", "-o", "prog", "prog.c", "-lm"]);
        assert_eq!(options.mode, Mode::Show);
        assert_eq!(
            options.compiler_args,
            ["-O2", "-o", "prog", "prog.c", "-lm"]
        );
        assert!(options.links);
    }

    #[test]
    fn compile_only_flags_stop_linking() {
        for flag in ["-c", "-S", "-E", "-M", "-MM"] {
            assert!(!parse_strs(&[flag, "x.c"]).links, "{flag} must not link");
        }
        assert!(parse_strs(&["-MD", "x.c"]).links, "-MD still links");
    }

    #[test]
    fn lone_v_does_not_link_but_v_with_sources_does() {
        let alone = parse_strs(&["-v"]);
        assert!(alone.print_version && !alone.links);
        let with_source = parse_strs(&["-v", "x.c"]);
        assert!(with_source.print_version && with_source.links);
    }

    #[test]
    fn compiler_option_is_taken_out() {
        let options = parse_strs(&["-cc=clang -m64", "x.c"]);
        assert_eq!(options.compiler_override.as_deref(), Some("clang -m64"));
        assert_eq!(options.compiler_args, ["x.c"]);
    }

    #[test]
    fn no_arguments_is_an_error() {
        assert!(matches!(
            parse(Language::C, Vec::new()),
            Err(WrapperError::NoArguments)
        ));
    }
}
