//! Finding and loading plugins from shared objects, and the built-in ones.
//!
//! [`ffi`] is the only user of `libloading`; [`search`] decides which files
//! are candidates and refuses those another user could write; [`builtin`]
//! holds the standard codecs compiled in; this module turns a search path
//! into a [`Registry`] of plugins (files first, then the built-in codecs no
//! file replaced) and the list of files it skipped, each with its reason.
//!
//! A run opens only the files of the plugins it names ([`Registry::named`],
//! found by file name: [`file_names`]), since opening a shared object runs
//! its constructors, as root in a capture kernel (issue 12). Only `vmdump
//! plugins` opens every `*.so` of the search path ([`Registry::discover`]).

pub mod builtin;
mod error;
mod ffi;
mod search;

use std::path::{Path, PathBuf};

pub use error::LoadError;
use ffi::AnyPlugin;
pub use search::{
    Kind, PLUGIN_PATH_ENV, SYSTEM_PLUGIN_DIR, SearchPath, check_trusted, file_names, is_file_name_safe,
};
use vmdump_sdk::client::{CompressorPlugin, FilterInfo, FilterPlugin, PluginInfo};

/// Where a compressor comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Compiled into the host ([`builtin`]).
    BuiltIn,
    /// Loaded from this file.
    File(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BuiltIn => f.write_str("built in"),
            Self::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A compressor plugin: built in, or loaded from a file.
#[derive(Debug, Clone)]
pub struct LoadedCompressor {
    /// Where it comes from.
    pub origin: Origin,
    /// What it says about itself.
    pub info: PluginInfo,
    /// Its validated table.
    pub plugin: CompressorPlugin,
}

/// A filter plugin loaded from a file.
#[derive(Debug, Clone)]
pub struct LoadedFilter {
    /// Where it was loaded from.
    pub path: PathBuf,
    /// What it says about itself.
    pub info: FilterInfo,
    /// Its validated table.
    pub plugin: FilterPlugin,
}

/// A plugin file of either kind.
pub enum Loaded {
    /// A compressor.
    Compressor(LoadedCompressor),
    /// A filter.
    Filter(LoadedFilter),
}

/// Loads one plugin file after checking who may write it.
///
/// # Errors
/// The [`LoadError`] of the first check that fails.
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    check_trusted(path)?;
    Ok(match ffi::open_plugin(path)? {
        AnyPlugin::Compressor(plugin) => {
            let origin = Origin::File(path.to_owned());
            Loaded::Compressor(LoadedCompressor { origin, info: plugin.info(), plugin })
        }
        AnyPlugin::Filter(plugin) => {
            Loaded::Filter(LoadedFilter { path: path.to_owned(), info: plugin.info(), plugin })
        }
    })
}

/// Loads one compressor plugin file.
///
/// # Errors
/// The [`LoadError`] of the first check that fails; a filter plugin is
/// [`LoadError::NotAPlugin`] here.
pub fn load_compressor(path: &Path) -> Result<LoadedCompressor, LoadError> {
    match load(path)? {
        Loaded::Compressor(c) => Ok(c),
        Loaded::Filter(_) => Err(LoadError::NotAPlugin { path: path.to_owned() }),
    }
}

/// Loads one filter plugin file.
///
/// # Errors
/// The [`LoadError`] of the first check that fails; a compressor plugin is
/// [`LoadError::NotAPlugin`] here.
pub fn load_filter(path: &Path) -> Result<LoadedFilter, LoadError> {
    match load(path)? {
        Loaded::Filter(f) => Ok(f),
        Loaded::Compressor(_) => Err(LoadError::NotAPlugin { path: path.to_owned() }),
    }
}

/// Why a file of a plugin's name is not that plugin.
fn misnamed(path: PathBuf, kind: Kind, name: &str, found: &Loaded) -> LoadError {
    let found = match found {
        Loaded::Compressor(c) => format!("compressor `{}`", c.info.name),
        Loaded::Filter(f) => format!("filter `{}`", f.info.name),
    };
    LoadError::Misnamed { path, expected: format!("{} `{name}`", kind.as_str()), found }
}

/// The compressor `name`: the first file of its name on `search_path` that
/// loads and is that compressor, else the built-in one of that name. No
/// other file is opened. The files of its name that were refused come
/// second, each with its reason.
pub fn find_compressor(search_path: &SearchPath, name: &str) -> (Option<LoadedCompressor>, Vec<LoadError>) {
    let mut refused = Vec::new();
    for path in search_path.files_named(Kind::Compressor, name) {
        match load(&path) {
            Ok(Loaded::Compressor(c)) if c.info.name == name => return (Some(c), refused),
            Ok(other) => refused.push(misnamed(path, Kind::Compressor, name, &other)),
            Err(e) => refused.push(e),
        }
    }
    let builtin = builtin::compressors().into_iter().find(|p| p.info().name == name);
    let builtin =
        builtin.map(|plugin| LoadedCompressor { origin: Origin::BuiltIn, info: plugin.info(), plugin });
    (builtin, refused)
}

/// The filter `name`: the first file of its name on `search_path` that
/// loads and is that filter, with the files of its name that were refused.
pub fn find_filter(search_path: &SearchPath, name: &str) -> (Option<LoadedFilter>, Vec<LoadError>) {
    let mut refused = Vec::new();
    for path in search_path.files_named(Kind::Filter, name) {
        match load(&path) {
            Ok(Loaded::Filter(f)) if f.info.name == name => return (Some(f), refused),
            Ok(other) => refused.push(misnamed(path, Kind::Filter, name, &other)),
            Err(e) => refused.push(e),
        }
    }
    (None, refused)
}

/// The plugins of a run (or every plugin on a search path, for `vmdump
/// plugins`), and the files skipped with their reasons.
#[derive(Debug, Default)]
pub struct Registry {
    /// Compressor plugins, first of each name only: files in search order,
    /// then the built-in codecs that no file of the same name replaced.
    pub compressors: Vec<LoadedCompressor>,
    /// Loaded filter plugins, first of each name only.
    pub filters: Vec<LoadedFilter>,
    /// Files that were not loaded, and why. In a registry of named plugins,
    /// only files of a name that was found elsewhere (a later directory, or
    /// built in): warnings.
    pub skipped: Vec<LoadError>,
    /// The directories searched.
    pub search_path: SearchPath,
    /// Names asked for and not found, with the files of that name refused.
    missing: Vec<(Kind, String, Vec<LoadError>)>,
}

impl Registry {
    /// Opens every `*.so` of `search_path` (`vmdump plugins` only: a run
    /// uses [`Registry::named`]); the first plugin of a name wins and later
    /// ones are reported as shadowed. The built-in codecs come last: a file
    /// of the same name replaces one.
    pub fn discover(search_path: SearchPath) -> Self {
        let mut registry = Self { search_path, ..Self::default() };
        for file in registry.search_path.candidate_files() {
            match load(&file) {
                Ok(Loaded::Compressor(found)) => registry.add_compressor(found),
                Ok(Loaded::Filter(found)) => registry.add_filter(found),
                Err(e) => registry.skipped.push(e),
            }
        }
        for plugin in builtin::compressors() {
            let info = plugin.info();
            if registry.compressors.iter().all(|c| c.info.name != info.name) {
                registry.compressors.push(LoadedCompressor { origin: Origin::BuiltIn, info, plugin });
            }
        }
        registry
    }

    /// The compressors and filters of these names and nothing else: for
    /// each, only the files of its name are opened ([`find_compressor`],
    /// [`find_filter`]); a built-in codec needs no file.
    pub fn named(search_path: SearchPath, compressors: &[&str], filters: &[&str]) -> Self {
        let mut registry = Self { search_path, ..Self::default() };
        for &name in compressors {
            if registry.compressors.iter().any(|c| c.info.name == name) {
                continue;
            }
            match find_compressor(&registry.search_path, name) {
                (Some(found), refused) => {
                    registry.compressors.push(found);
                    registry.skipped.extend(refused);
                }
                (None, refused) => registry.missing.push((Kind::Compressor, name.to_owned(), refused)),
            }
        }
        for &name in filters {
            if registry.filters.iter().any(|f| f.info.name == name) {
                continue;
            }
            match find_filter(&registry.search_path, name) {
                (Some(found), refused) => {
                    registry.filters.push(found);
                    registry.skipped.extend(refused);
                }
                (None, refused) => registry.missing.push((Kind::Filter, name.to_owned(), refused)),
            }
        }
        registry
    }

    fn shadowed(path: PathBuf, name: String, first: &Path) -> LoadError {
        LoadError::Shadowed { path, name, first: first.to_owned() }
    }

    /// Adds a compressor from a file; files come before the built-in codecs.
    fn add_compressor(&mut self, found: LoadedCompressor) {
        let first = self.compressors.iter().find(|c| c.info.name == found.info.name);
        match (first.map(|c| &c.origin), &found.origin) {
            (Some(Origin::File(first)), Origin::File(path)) => {
                self.skipped.push(Self::shadowed(path.clone(), found.info.name.clone(), first))
            }
            _ => self.compressors.push(found),
        }
    }

    fn add_filter(&mut self, found: LoadedFilter) {
        match self.filters.iter().find(|f| f.info.name == found.info.name) {
            Some(first) => self.skipped.push(Self::shadowed(found.path, found.info.name, &first.path)),
            None => self.filters.push(found),
        }
    }

    /// [`LoadError::NotFound`] for `name`: what is available, the file
    /// names tried, where, and why files of that name were refused.
    fn not_found(&self, kind: Kind, name: &str, available: Vec<&str>) -> LoadError {
        let refused: String = self
            .missing
            .iter()
            .filter(|(k, n, _)| *k == kind && n == name)
            .flat_map(|(_, _, refused)| refused.iter().map(|e| format!("; {e}")))
            .collect();
        let tried = match is_file_name_safe(name) {
            true => file_names(kind, name).join(", "),
            false => "no file (the name has characters other than letters, digits, `-`, `_` and `.`)".into(),
        };
        let available = if available.is_empty() { "none".to_owned() } else { available.join(", ") };
        let searched = format!("looked for {tried} in {}{refused}", self.search_path.display());
        LoadError::NotFound { kind: kind.as_str(), name: name.to_owned(), available, searched }
    }

    /// The compressor named `name`.
    ///
    /// # Errors
    /// [`LoadError::NotFound`] listing what is available and where it looked.
    pub fn compressor(&self, name: &str) -> Result<&LoadedCompressor, LoadError> {
        self.compressors.iter().find(|c| c.info.name == name).ok_or_else(|| {
            let mut available: Vec<&str> = self.compressors.iter().map(|c| c.info.name.as_str()).collect();
            let builtin = builtin::compressors().into_iter().map(|c| c.info().name);
            let builtin: Vec<String> = builtin.filter(|b| !available.contains(&b.as_str())).collect();
            available.extend(builtin.iter().map(String::as_str));
            self.not_found(Kind::Compressor, name, available)
        })
    }

    /// The filter named `name`.
    ///
    /// # Errors
    /// [`LoadError::NotFound`] listing what is available and where it looked.
    pub fn filter(&self, name: &str) -> Result<&LoadedFilter, LoadError> {
        self.filters.iter().find(|f| f.info.name == name).ok_or_else(|| {
            self.not_found(Kind::Filter, name, self.filters.iter().map(|f| f.info.name.as_str()).collect())
        })
    }
}
