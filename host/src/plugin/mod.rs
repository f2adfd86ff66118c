//! Finding and loading plugins from shared objects, and the built-in ones.
//!
//! [`ffi`] is the only user of `libloading`; [`search`] decides which files
//! are candidates and refuses those another user could write; [`builtin`]
//! holds the standard codecs compiled in; this module turns a search path
//! into a [`Registry`] of plugins (files first, then the built-in codecs no
//! file replaced) and the list of files it skipped, each with its reason.

pub mod builtin;
mod error;
mod ffi;
mod search;

use std::path::{Path, PathBuf};

pub use error::LoadError;
use ffi::AnyPlugin;
pub use search::{PLUGIN_PATH_ENV, SYSTEM_PLUGIN_DIR, SearchPath, check_trusted};
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

/// Every plugin found on a search path, and every file skipped with its reason.
#[derive(Debug, Default)]
pub struct Registry {
    /// Compressor plugins, first of each name only: files in search order,
    /// then the built-in codecs that no file of the same name replaced.
    pub compressors: Vec<LoadedCompressor>,
    /// Loaded filter plugins, first of each name only.
    pub filters: Vec<LoadedFilter>,
    /// Files that were not loaded, and why.
    pub skipped: Vec<LoadError>,
    /// The directories searched.
    pub search_path: SearchPath,
}

impl Registry {
    /// Loads every candidate file of `search_path`; the first plugin of a
    /// name wins and later ones are reported as shadowed. The built-in
    /// codecs come last: a file of the same name replaces one.
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

    /// The compressor named `name`.
    ///
    /// # Errors
    /// [`LoadError::NotFound`] listing what is available and where it looked.
    pub fn compressor(&self, name: &str) -> Result<&LoadedCompressor, LoadError> {
        self.compressors.iter().find(|c| c.info.name == name).ok_or_else(|| LoadError::NotFound {
            kind: "compressor",
            name: name.to_owned(),
            available: self.compressors.iter().map(|c| c.info.name.as_str()).collect::<Vec<_>>().join(", "),
            search_path: self.search_path.display(),
        })
    }

    /// The filter named `name`.
    ///
    /// # Errors
    /// [`LoadError::NotFound`] listing what is available and where it looked.
    pub fn filter(&self, name: &str) -> Result<&LoadedFilter, LoadError> {
        self.filters.iter().find(|f| f.info.name == name).ok_or_else(|| LoadError::NotFound {
            kind: "filter",
            name: name.to_owned(),
            available: self.filters.iter().map(|f| f.info.name.as_str()).collect::<Vec<_>>().join(", "),
            search_path: self.search_path.display(),
        })
    }
}
