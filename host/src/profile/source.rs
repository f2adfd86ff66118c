//! Where a run's profile comes from: the command line, `VMDUMP_PROFILE`,
//! the system profile or the built-in default, decided in one place.

use std::path::{Path, PathBuf};

use super::{Profile, ProfileError};

/// Environment variable naming the profile when the command line names none.
pub const PROFILE_ENV: &str = "VMDUMP_PROFILE";

/// `--profile builtin` (or `VMDUMP_PROFILE=builtin`): the compiled-in
/// default, whatever the system profile says.
pub const BUILTIN: &str = "builtin";

/// The directory of the system profile: set by a packager at build time
/// (`VMDUMP_SYSCONFDIR`, scripts/install.sh), `/etc` by default.
pub const SYSCONFDIR: &str = match option_env!("VMDUMP_SYSCONFDIR") {
    Some(dir) => dir,
    None => "/etc",
};

/// The system profile, read when it exists and nothing else names one.
pub fn system_profile() -> PathBuf {
    Path::new(SYSCONFDIR).join("vmdump/vmdump.toml")
}

/// Where a run's profile came from. The first that applies wins: the
/// command line (`--profile`), then `VMDUMP_PROFILE`, then the system
/// profile if the file exists, then the built-in default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileSource {
    /// `--profile FILE`.
    CommandLine(PathBuf),
    /// `VMDUMP_PROFILE=FILE`.
    Environment(PathBuf),
    /// The system profile ([`system_profile`]).
    System(PathBuf),
    /// `config/default.toml`, compiled in.
    BuiltIn,
}

impl ProfileSource {
    /// Decides where the profile comes from, given the command line's
    /// `--profile`, the value of `VMDUMP_PROFILE` and the system profile's path.
    pub fn choose(cli: Option<&Path>, env: Option<&std::ffi::OsStr>, system: &Path) -> Self {
        let named = |p: &Path| p.as_os_str() == BUILTIN;
        match (cli, env.filter(|v| !v.is_empty()).map(Path::new)) {
            (Some(path), _) if named(path) => Self::BuiltIn,
            (Some(path), _) => Self::CommandLine(path.to_owned()),
            (None, Some(path)) if named(path) => Self::BuiltIn,
            (None, Some(path)) => Self::Environment(path.to_owned()),
            (None, None) if system.exists() => Self::System(system.to_owned()),
            (None, None) => Self::BuiltIn,
        }
    }

    /// [`ProfileSource::choose`] for this process: its environment and [`system_profile`].
    pub fn of_process(cli: Option<&Path>) -> Self {
        Self::choose(cli, std::env::var_os(PROFILE_ENV).as_deref(), &system_profile())
    }

    /// The file, unless built in.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::CommandLine(p) | Self::Environment(p) | Self::System(p) => Some(p),
            Self::BuiltIn => None,
        }
    }

    /// Reads the profile.
    ///
    /// # Errors
    /// [`ProfileError`] naming the file and the problem.
    pub fn load(&self) -> Result<Profile, ProfileError> {
        self.path().map_or_else(|| Ok(Profile::default()), Profile::load)
    }
}
