//! Why a plugin file was refused.

use std::path::PathBuf;

use vmdump_sdk::abi::{ABI_MAJOR, ABI_MINOR};
use vmdump_sdk::client::TableError;

/// One typed error per way a plugin can fail to load. Every variant names the
/// file; ABI mismatches name both versions.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// dlopen failed: not a shared object, missing dependency, wrong architecture.
    #[error("{path}: cannot be loaded: {reason}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The loader's message.
        reason: String,
    },
    /// A shared object without the entry symbol.
    #[error("{path}: not a vmdump plugin (no symbol vmdump_compressor_entry_v1 or vmdump_filter_entry_v1)")]
    NotAPlugin {
        /// The file.
        path: PathBuf,
    },
    /// The entry returned a table the host refuses.
    #[error("{path}: {cause} (host ABI {ABI_MAJOR}.{ABI_MINOR})")]
    BadTable {
        /// The file.
        path: PathBuf,
        /// What is wrong with the table.
        cause: TableError,
    },
    /// Another user could change the file or its directory: a dump tool runs
    /// as root and must not load code others can write.
    #[error("{path}: refused: {reason}")]
    Insecure {
        /// The file or directory.
        path: PathBuf,
        /// Which permission is wrong.
        reason: String,
    },
    /// A plugin with the same name was found earlier in the search path.
    #[error("{path}: plugin `{name}` is shadowed by {first}")]
    Shadowed {
        /// The later file.
        path: PathBuf,
        /// The plugin name.
        name: String,
        /// The file that wins.
        first: PathBuf,
    },
    /// A file of a plugin's name that is another plugin.
    #[error("{path}: its file name is that of the {expected}, but it holds the {found}")]
    Misnamed {
        /// The file.
        path: PathBuf,
        /// The kind and name its file name stands for.
        expected: String,
        /// The kind and name of the plugin in it.
        found: String,
    },
    /// No plugin of that kind and name on the search path.
    #[error(
        "no {kind} plugin named `{name}` (available: {available}); {searched}; \
         `vmdump plugins` lists every plugin there"
    )]
    NotFound {
        /// "compressor" or "filter".
        kind: &'static str,
        /// The requested name.
        name: String,
        /// Names that are available (loaded or built in).
        available: String,
        /// The file names tried, the directories searched, and the files
        /// of that name refused with their reasons.
        searched: String,
    },
}
