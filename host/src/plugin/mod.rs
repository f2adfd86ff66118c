//! Finding and loading plugins from shared objects.
//!
//! [`ffi`] is the only user of `libloading`; [`search`] decides which files
//! are candidates and refuses those another user could write; this module
//! turns a search path into a [`Registry`] of loaded plugins and the list of
//! files it skipped, each with its reason.

mod error;
mod ffi;
mod search;

use std::path::{Path, PathBuf};

pub use error::LoadError;
pub use search::{PLUGIN_PATH_ENV, SYSTEM_PLUGIN_DIR, SearchPath, check_trusted};
use vmdump_sdk::client::{CompressorPlugin, PluginInfo};

/// A compressor plugin loaded from a file.
#[derive(Debug, Clone)]
pub struct LoadedCompressor {
    /// Where it was loaded from.
    pub path: PathBuf,
    /// What it says about itself.
    pub info: PluginInfo,
    /// Its validated table.
    pub plugin: CompressorPlugin,
}

/// Loads one plugin file after checking who may write it.
///
/// # Errors
/// The [`LoadError`] of the first check that fails.
pub fn load_compressor(path: &Path) -> Result<LoadedCompressor, LoadError> {
    check_trusted(path)?;
    let plugin = ffi::open_compressor(path)?;
    Ok(LoadedCompressor { path: path.to_owned(), info: plugin.info(), plugin })
}

/// Every plugin found on a search path, and every file skipped with its reason.
#[derive(Debug, Default)]
pub struct Registry {
    /// Loaded plugins, first of each name only.
    pub compressors: Vec<LoadedCompressor>,
    /// Files that were not loaded, and why.
    pub skipped: Vec<LoadError>,
    /// The directories searched.
    pub search_path: SearchPath,
}

impl Registry {
    /// Loads every candidate file of `search_path`; the first plugin of a
    /// name wins and later ones are reported as shadowed.
    pub fn discover(search_path: SearchPath) -> Self {
        let mut registry = Self { search_path, ..Self::default() };
        for file in registry.search_path.candidate_files() {
            match load_compressor(&file) {
                Ok(found) => registry.add(found),
                Err(e) => registry.skipped.push(e),
            }
        }
        registry
    }

    fn add(&mut self, found: LoadedCompressor) {
        match self.compressors.iter().find(|c| c.info.name == found.info.name) {
            Some(first) => self.skipped.push(LoadError::Shadowed {
                path: found.path,
                name: found.info.name,
                first: first.path.clone(),
            }),
            None => self.compressors.push(found),
        }
    }

    /// The compressor named `name`.
    ///
    /// # Errors
    /// [`LoadError::NotFound`] listing what is available and where it looked.
    pub fn compressor(&self, name: &str) -> Result<&LoadedCompressor, LoadError> {
        self.compressors.iter().find(|c| c.info.name == name).ok_or_else(|| LoadError::NotFound {
            name: name.to_owned(),
            available: self.compressors.iter().map(|c| c.info.name.as_str()).collect::<Vec<_>>().join(", "),
            search_path: self.search_path.display(),
        })
    }
}
