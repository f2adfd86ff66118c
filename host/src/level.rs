//! The dump level (`-d`, makedumpfile's `dump_level`): which kinds of page
//! a dump leaves out, one bit each (kdump-format.md §5.1). The one type
//! for it; `plan::decide_level` is the one place a run's level is decided.

use std::fmt;
use std::ops::{BitAnd, BitOr};
use std::str::FromStr;

/// A dump level, 0 to 31: a set of the bits below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DumpLevel(u8);

/// What each bit leaves out, for `--help`, the man page and messages.
pub const BITS: [(DumpLevel, &str); 5] = [
    (DumpLevel::ZERO, "zero pages (all point at one shared zero page)"),
    (DumpLevel::CACHE, "page cache without private data"),
    (DumpLevel::CACHE_PRIVATE, "all page cache"),
    (DumpLevel::USER, "user process data (anonymous and hugetlbfs pages)"),
    (DumpLevel::FREE, "free pages"),
];

/// `--help` of `-d`: every bit.
pub const HELP: &str = "Dump level 0-31, a sum of: 1 zero pages (all point at one shared zero page), 2 page cache \
    without private data, 4 all page cache, 8 user process data (anonymous and hugetlbfs pages), 16 free \
    pages; 2-16 are classified from the kernel's struct pages through VMCOREINFO. 0 keeps every page";

/// A level out of range, or not a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dump level {0} is out of range 0-31")]
pub struct LevelError(pub String);

impl DumpLevel {
    /// Every page kept.
    pub const NONE: Self = Self(0);
    /// Bit 1: zero pages.
    pub const ZERO: Self = Self(1);
    /// Bit 2: page cache without PG_private.
    pub const CACHE: Self = Self(2);
    /// Bit 4: all page cache.
    pub const CACHE_PRIVATE: Self = Self(4);
    /// Bit 8: user data (anonymous and hugetlbfs pages).
    pub const USER: Self = Self(8);
    /// Bit 16: free pages.
    pub const FREE: Self = Self(16);
    /// The bits decided from struct pages (2, 4, 8, 16).
    pub const CLASSIFIED: Self = Self(30);
    /// Every bit.
    pub const ALL: Self = Self(31);

    /// The level of `bits`.
    ///
    /// # Errors
    /// [`LevelError`] above 31.
    pub fn new(bits: u8) -> Result<Self, LevelError> {
        if bits > Self::ALL.0 {
            return Err(LevelError(bits.to_string()));
        }
        Ok(Self(bits))
    }

    /// The level a dump file records (its sub header), whatever else the
    /// field holds.
    pub fn recorded(field: i32) -> Self {
        Self((field & 31) as u8)
    }

    /// The bits as makedumpfile writes them.
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether zero pages are left out (bit 1).
    pub const fn excludes_zero_pages(self) -> bool {
        self.contains(Self::ZERO)
    }

    /// The bits that need the kernel's struct pages.
    pub const fn classified(self) -> Self {
        Self(self.0 & Self::CLASSIFIED.0)
    }

    /// The bits of this level as a list, "2, 4, 8".
    pub fn list(self) -> String {
        let set = BITS.iter().filter(|(bit, _)| self.contains(*bit)).map(|(bit, _)| bit.0.to_string());
        set.collect::<Vec<_>>().join(", ")
    }

    /// This level without the bits of `other`.
    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }
}

impl BitOr for DumpLevel {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl BitAnd for DumpLevel {
    type Output = Self;
    fn bitand(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }
}

impl fmt::Display for DumpLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for DumpLevel {
    type Err = LevelError;

    fn from_str(text: &str) -> Result<Self, LevelError> {
        let bits = text.trim().parse::<u8>().map_err(|_| LevelError(text.to_owned()))?;
        Self::new(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_in_range_only() {
        assert_eq!("31".parse::<DumpLevel>(), Ok(DumpLevel::ALL));
        assert_eq!("0".parse::<DumpLevel>(), Ok(DumpLevel::NONE));
        assert!("32".parse::<DumpLevel>().unwrap_err().to_string().contains("32 is out of range 0-31"));
        assert!("x".parse::<DumpLevel>().is_err());
        assert_eq!(DumpLevel::recorded(0x101f), DumpLevel::ALL);
    }

    #[test]
    fn the_bits_are_named_and_combined() {
        let level = DumpLevel::ZERO | DumpLevel::FREE;
        assert_eq!(
            (level.bits(), level.classified(), level.list()),
            (17, DumpLevel::FREE, "1, 16".to_owned())
        );
        assert!(
            level.excludes_zero_pages()
                && level.contains(DumpLevel::FREE)
                && !level.contains(DumpLevel::USER)
        );
        for (bit, words) in BITS {
            assert!(HELP.contains(&format!("{} {words}", bit.bits())), "--help lacks bit {bit}");
        }
    }
}
