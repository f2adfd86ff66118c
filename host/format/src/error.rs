//! The error type of the format crate.
//!
//! Every variant names *what* failed and *where*: a file offset (hex), a
//! program-header index, a note index, a VMCOREINFO line number or a
//! position in a flattened stream. Libraries never print; the host adds its
//! own context with `anyhow`.

use std::io;

/// Errors from parsing or laying out vmdump's file formats.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The underlying source failed while reading or writing `len` bytes at `offset`.
    #[error("I/O error on {len:#x} bytes at offset {offset:#x}: {cause}")]
    Io {
        /// Byte offset of the failed access.
        offset: u64,
        /// Length of the failed access.
        len: u64,
        /// The I/O error (in the message, not chained, so it is said once).
        cause: io::Error,
    },

    /// A structure extends beyond the end of the file.
    #[error(
        "truncated file: {what} at offset {offset:#x} needs {len:#x} bytes but the file has only {size:#x}"
    )]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Its offset.
        offset: u64,
        /// Its length.
        len: u64,
        /// The file size.
        size: u64,
    },

    /// The first four bytes are not `\x7fELF`.
    #[error("not an ELF file: magic at offset 0x0 is {found:02x?}, expected [7f, 45, 4c, 46]")]
    BadElfMagic {
        /// The bytes found.
        found: [u8; 4],
    },

    /// `e_ident[EI_CLASS]` is not ELFCLASS64.
    #[error("unsupported ELF class {class} at offset 0x4: only ELF64 (2) is supported{}", if *class == 1 { " (ELF32 vmcores are not supported)" } else { "" })]
    BadElfClass {
        /// The class byte.
        class: u8,
    },

    /// `e_ident[EI_DATA]` is neither little- nor big-endian.
    #[error("bad ELF data encoding {data} at offset 0x5: expected 1 (little-endian) or 2 (big-endian)")]
    BadElfData {
        /// The data byte.
        data: u8,
    },

    /// `e_type` is not ET_CORE.
    #[error("ELF e_type {e_type:#x} at offset 0x10 is not ET_CORE (4): not a vmcore")]
    BadElfType {
        /// The type found.
        e_type: u16,
    },

    /// `e_machine` is not a 64-bit Linux architecture we know.
    #[error("unsupported ELF machine {machine:#x} at offset 0x12; supported: {supported}")]
    BadElfMachine {
        /// The machine found.
        machine: u16,
        /// The names of the supported machines.
        supported: &'static str,
    },

    /// `e_phoff`, `e_phnum` or `e_phentsize` is out of range.
    #[error(
        "bad program header table (e_phoff {phoff:#x}, e_phnum {phnum}, e_phentsize {phentsize}): {reason}"
    )]
    BadProgramHeaders {
        /// `e_phoff`.
        phoff: u64,
        /// Number of program headers (after PN_XNUM resolution).
        phnum: u64,
        /// `e_phentsize`.
        phentsize: u16,
        /// What is wrong.
        reason: &'static str,
    },

    /// A PT_LOAD's file range lies (partly) beyond the end of the file.
    #[error(
        "program header {index} at offset {ph_offset:#x}: PT_LOAD file range {start:#x}-{end:#x} extends beyond end of file (size {size:#x})"
    )]
    LoadBeyondEof {
        /// Program header index.
        index: usize,
        /// File offset of the program header.
        ph_offset: u64,
        /// Start of the segment's file range.
        start: u64,
        /// End (exclusive, saturated) of the segment's file range.
        end: u64,
        /// File size.
        size: u64,
    },

    /// A PT_NOTE's file range lies (partly) beyond the end of the file.
    #[error(
        "program header {index} at offset {ph_offset:#x}: PT_NOTE file range {start:#x}-{end:#x} extends beyond end of file (size {size:#x})"
    )]
    NoteBeyondEof {
        /// Program header index.
        index: usize,
        /// File offset of the program header.
        ph_offset: u64,
        /// Start of the segment's file range.
        start: u64,
        /// End (exclusive, saturated) of the segment's file range.
        end: u64,
        /// File size.
        size: u64,
    },

    /// A PT_LOAD is inconsistent in itself (address overflow, p_filesz > p_memsz).
    #[error("program header {index} at offset {ph_offset:#x}: bad PT_LOAD: {reason}")]
    BadLoad {
        /// Program header index.
        index: usize,
        /// File offset of the program header.
        ph_offset: u64,
        /// What is wrong.
        reason: &'static str,
    },

    /// The PT_NOTE segments together are larger than the file.
    #[error("PT_NOTE segments total {total:#x} bytes, more than the file size {size:#x}")]
    NotesTooLarge {
        /// Sum of the PT_NOTE sizes.
        total: u64,
        /// File size.
        size: u64,
    },

    /// An ELF note header or its sizes are inconsistent.
    #[error("note {note_index} at offset {offset:#x}: {reason}")]
    MalformedNote {
        /// Index of the note (0-based, over all PT_NOTE segments).
        note_index: usize,
        /// File offset of the note header (offset inside the notes payload
        /// when the notes did not come from a file).
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },

    /// The vmcore has no usable PT_LOAD segment.
    #[error("no PT_LOAD segment with a physical address: nothing to dump")]
    NoLoad,

    /// A VMCOREINFO line is not `KEY=value`.
    #[error("VMCOREINFO line {line}: {reason}: {text:?}")]
    BadVmcoreinfoLine {
        /// 1-based line number.
        line: usize,
        /// The offending line (truncated to 80 bytes).
        text: String,
        /// What is wrong.
        reason: &'static str,
    },

    /// A page size is not a power of two in 512..=1 MiB.
    #[error("invalid page size {0:#x}: must be a power of two between 0x200 and 0x100000")]
    BadPageSize(u64),

    /// A kdump-compressed structure is invalid.
    #[error("kdump-compressed {what} at offset {offset:#x}: {reason}")]
    BadKdump {
        /// The structure.
        what: &'static str,
        /// Its file offset.
        offset: u64,
        /// What is wrong.
        reason: String,
    },

    /// A kdump-compressed layout does not fit the on-disk field widths.
    #[error("kdump layout overflow: {0}")]
    LayoutOverflow(&'static str),

    /// A flattened stream is invalid.
    #[error("flattened stream at position {position:#x}: {reason}")]
    BadFlattened {
        /// Byte position in the input stream.
        position: u64,
        /// What is wrong.
        reason: String,
    },

    /// BTF type information is invalid.
    #[error("BTF at byte {offset:#x}: {reason}")]
    BadBtf {
        /// Byte offset in the BTF blob.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
}

impl FormatError {
    /// Wraps an I/O error of an access of `len` bytes at `offset`.
    pub fn io(offset: u64, len: u64, cause: io::Error) -> Self {
        FormatError::Io { offset, len, cause }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_and_where() {
        let e = FormatError::LoadBeyondEof {
            index: 3,
            ph_offset: 0x1c8,
            start: 0x2000,
            end: 0x9000,
            size: 0x8000,
        };
        assert_eq!(
            e.to_string(),
            "program header 3 at offset 0x1c8: PT_LOAD file range 0x2000-0x9000 extends beyond end of file (size 0x8000)"
        );
        let e = FormatError::BadElfClass { class: 1 };
        assert!(e.to_string().contains("ELF32"), "{e}");
        let e = FormatError::BadVmcoreinfoLine { line: 7, text: "junk".into(), reason: "no '='" };
        assert_eq!(e.to_string(), "VMCOREINFO line 7: no '=': \"junk\"");
    }
}
