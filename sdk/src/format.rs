//! The page compression formats of the kdump-compressed file format.

use std::fmt;

/// The `DUMP_DH_COMPRESSED_*` code a compressor's output is. Standard readers
/// (crash, libkdumpfile, drgn, makedumpfile) know the four standard ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KdumpFormat {
    /// RFC 1950 zlib stream, one per page (`0x01`).
    Zlib,
    /// Raw LZO1X block (`0x02`).
    Lzo,
    /// Raw Snappy block (`0x04`).
    Snappy,
    /// One zstd frame with the content size (`0x20`).
    Zstd,
    /// Not a standard format: the dump needs the same plugin to be read (`0`).
    Custom,
}

impl KdumpFormat {
    /// Every standard format, in code order.
    pub const STANDARD: [KdumpFormat; 4] = [Self::Zlib, Self::Lzo, Self::Snappy, Self::Zstd];

    /// The on-disk code (header `status` bit and page descriptor `flags`).
    pub const fn code(self) -> u32 {
        match self {
            Self::Zlib => 0x01,
            Self::Lzo => 0x02,
            Self::Snappy => 0x04,
            Self::Zstd => 0x20,
            Self::Custom => 0,
        }
    }

    /// The format of an on-disk code; `None` for a code that is not one.
    pub const fn from_code(code: u32) -> Option<Self> {
        match code {
            0x01 => Some(Self::Zlib),
            0x02 => Some(Self::Lzo),
            0x04 => Some(Self::Snappy),
            0x20 => Some(Self::Zstd),
            0 => Some(Self::Custom),
            _ => None,
        }
    }

    /// The lowercase name (`"zlib"`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Zlib => "zlib",
            Self::Lzo => "lzo",
            Self::Snappy => "snappy",
            Self::Zstd => "zstd",
            Self::Custom => "custom",
        }
    }
}

impl fmt::Display for KdumpFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
