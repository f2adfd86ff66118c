//! [`MapError`]: why the kernel's own map (kallsyms, BTF, the structures
//! read through them) could not be read, naming the table and the address.

use vmdump_format::FormatError;

use crate::xlat::XlatError;

/// Errors reading the dumped kernel's symbols and types.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// VMCOREINFO (or kallsyms, for symbols it does not export) lacks a
    /// symbol the table needs.
    #[error("{table}: the kernel does not give {symbol}{}", hint(table))]
    MissingSymbol {
        /// The table being read (kallsyms, BTF).
        table: &'static str,
        /// What is missing, as `SYMBOL(name)` or a kallsyms name.
        symbol: String,
    },

    /// A read of the kernel's memory failed.
    #[error("{table}: reading {what} at {vaddr:#x}: {cause}")]
    Read {
        /// The table being read.
        table: &'static str,
        /// The part of it.
        what: &'static str,
        /// Where.
        vaddr: u64,
        /// The translation or read error.
        cause: Box<XlatError>,
    },

    /// The table's bytes are not what the kernel writes.
    #[error("{table}: {what} at {vaddr:#x}: {detail}")]
    Corrupt {
        /// The table being read.
        table: &'static str,
        /// The part of it.
        what: &'static str,
        /// Where.
        vaddr: u64,
        /// What is wrong.
        detail: String,
    },

    /// The BTF bytes read from the dump do not parse.
    #[error("BTF of {owner} at {vaddr:#x}: {cause}")]
    Btf {
        /// `vmlinux` or the module's name.
        owner: String,
        /// Where its bytes start.
        vaddr: u64,
        /// The parse error.
        cause: FormatError,
    },

    /// A table that needs another one, which could not be read.
    #[error("{table} needs {needs}, which could not be read: {cause}")]
    Needs {
        /// The table being read.
        table: &'static str,
        /// The table it needs.
        needs: &'static str,
        /// Why that one could not be read.
        cause: String,
    },

    /// A name that BTF does not describe.
    #[error("BTF has no {0}")]
    NoType(String),
}

fn hint(table: &str) -> &'static str {
    if table == "kallsyms" { " (VMCOREINFO exports the kallsyms tables since Linux 6.0)" } else { "" }
}

/// A failed read of `what` at `vaddr` in `table`.
pub(crate) fn read_error(
    table: &'static str,
    what: &'static str,
    vaddr: u64,
) -> impl FnOnce(XlatError) -> MapError {
    move |cause| MapError::Read { table, what, vaddr, cause: Box::new(cause) }
}

/// The error of `table`, which needs `needs`, when that could not be read.
pub(crate) fn needing(table: &'static str, needs: &'static str) -> impl FnOnce(&MapError) -> MapError {
    move |e| MapError::Needs { table, needs, cause: e.to_string() }
}
