//! What differs between `mpicc` and `mpicxx`: the wrapper's name, the compiler it runs by
//! default, the environment variable and the option that choose another compiler.

/// The source language a wrapper compiles; everything else about the two wrappers is shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// `mpicc`: the C compiler.
    C,
    /// `mpicxx`: the C++ compiler.
    Cxx,
}

impl Language {
    /// The wrapper's own name, used in messages and in `-show` help.
    pub fn wrapper_name(self) -> &'static str {
        match self {
            Language::C => "mpicc",
            Language::Cxx => "mpicxx",
        }
    }

    /// The compiler run when neither the environment nor the command line names one.
    pub fn default_compiler(self) -> &'static str {
        match self {
            Language::C => "cc",
            Language::Cxx => "c++",
        }
    }

    /// The environment variable that overrides the compiler (MPICH's names).
    pub fn compiler_variable(self) -> &'static str {
        match self {
            Language::C => "MPICH_CC",
            Language::Cxx => "MPICH_CXX",
        }
    }

    /// The command-line option prefix that overrides the compiler (`-cc=gcc`, `-cxx=g++`).
    pub fn compiler_option(self) -> &'static str {
        match self {
            Language::C => "-cc=",
            Language::Cxx => "-cxx=",
        }
    }

    /// The environment variable naming a profiling library, the default for `-profile=`.
    pub fn profile_variable(self) -> &'static str {
        match self {
            Language::C => "MPICC_PROFILE",
            Language::Cxx => "MPICXX_PROFILE",
        }
    }

    /// The language's name in messages ("the C compiler").
    pub fn description(self) -> &'static str {
        match self {
            Language::C => "C",
            Language::Cxx => "C++",
        }
    }
}
