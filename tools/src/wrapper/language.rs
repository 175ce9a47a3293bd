//! What differs between the wrappers: the wrapper's name, the compiler it runs by default, the
//! environment variable and the option that choose another compiler, and the header that
//! marks the include directory (`mpi.h`, or `mpif.h` beside `mpi.mod` for Fortran).

/// The source language a wrapper compiles; everything else about the wrappers is shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// `mpicc`: the C compiler.
    C,
    /// `mpicxx`: the C++ compiler.
    Cxx,
    /// `mpifort`: the Fortran compiler (`mpif.h` and the `mpi` module).
    Fortran,
    /// `mpif77`: as `mpifort`, under MPICH's Fortran 77 name and variable.
    Fortran77,
    /// `mpif90`: as `mpifort`, under MPICH's Fortran 90 name and variable.
    Fortran90,
}

impl Language {
    /// The wrapper's own name, used in messages and in `-show` help.
    pub fn wrapper_name(self) -> &'static str {
        match self {
            Language::C => "mpicc",
            Language::Cxx => "mpicxx",
            Language::Fortran => "mpifort",
            Language::Fortran77 => "mpif77",
            Language::Fortran90 => "mpif90",
        }
    }

    /// Whether this is one of the Fortran wrappers.
    pub fn is_fortran(self) -> bool {
        matches!(
            self,
            Language::Fortran | Language::Fortran77 | Language::Fortran90
        )
    }

    /// The compiler run when neither the environment nor the command line names one.
    pub fn default_compiler(self) -> &'static str {
        match self {
            Language::C => "cc",
            Language::Cxx => "c++",
            Language::Fortran | Language::Fortran77 | Language::Fortran90 => "gfortran",
        }
    }

    /// The environment variable that overrides the compiler (MPICH's names).
    pub fn compiler_variable(self) -> &'static str {
        match self {
            Language::C => "MPICH_CC",
            Language::Cxx => "MPICH_CXX",
            Language::Fortran => "MPICH_FC",
            Language::Fortran77 => "MPICH_F77",
            Language::Fortran90 => "MPICH_F90",
        }
    }

    /// The command-line option prefix that overrides the compiler (`-cc=gcc`, `-cxx=g++`,
    /// `-fc=gfortran`).
    pub fn compiler_option(self) -> &'static str {
        match self {
            Language::C => "-cc=",
            Language::Cxx => "-cxx=",
            Language::Fortran | Language::Fortran77 | Language::Fortran90 => "-fc=",
        }
    }

    /// The environment variable naming a profiling library, the default for `-profile=`.
    pub fn profile_variable(self) -> &'static str {
        match self {
            Language::C => "MPICC_PROFILE",
            Language::Cxx => "MPICXX_PROFILE",
            Language::Fortran => "MPIFORT_PROFILE",
            Language::Fortran77 => "MPIF77_PROFILE",
            Language::Fortran90 => "MPIF90_PROFILE",
        }
    }

    /// The language's name in messages ("the C compiler").
    pub fn description(self) -> &'static str {
        match self {
            Language::C => "C",
            Language::Cxx => "C++",
            Language::Fortran | Language::Fortran77 | Language::Fortran90 => "Fortran",
        }
    }

    /// The header whose directory the wrapper passes as `-I`.
    pub fn header(self) -> &'static str {
        if self.is_fortran() {
            super::layout::FORTRAN_HEADER
        } else {
            super::layout::MAIN_HEADER
        }
    }

    /// What to tell a user whose compiler cannot be started.
    pub fn install_hint(self) -> &'static str {
        match self {
            Language::C => "Install one (Debian: apt-get install gcc)",
            Language::Cxx => "Install one (Debian: apt-get install g++)",
            Language::Fortran | Language::Fortran77 | Language::Fortran90 => {
                "The Fortran wrappers need gfortran: install it (Debian: apt-get install gfortran)"
            }
        }
    }
}
