//! Explicit-width, explicit-byte-order integer access (house style point 12).

/// Byte order of an ELF file (`e_ident[EI_DATA]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endian {
    /// ELFDATA2LSB.
    Little,
    /// ELFDATA2MSB.
    Big,
}

impl Endian {
    /// Reads a `u16` at `off`. Panics if `b` is too short (callers slice
    /// buffers they have already length-checked).
    pub fn u16(self, b: &[u8], off: usize) -> u16 {
        let a = [b[off], b[off + 1]];
        match self {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    }

    /// Reads a `u32` at `off` (same contract as [`Endian::u16`]).
    pub fn u32(self, b: &[u8], off: usize) -> u32 {
        let mut a = [0u8; 4];
        a.copy_from_slice(&b[off..off + 4]);
        match self {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        }
    }

    /// Reads a `u64` at `off` (same contract as [`Endian::u16`]).
    pub fn u64(self, b: &[u8], off: usize) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[off..off + 8]);
        match self {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        }
    }

    /// Reads an unsigned integer of `width` bytes (1 to 8) at `off`, widened
    /// to `u64` (same contract as [`Endian::u16`]).
    pub fn uint(self, b: &[u8], off: usize, width: usize) -> u64 {
        let mut a = [0u8; 8];
        match self {
            Endian::Little => {
                a[..width].copy_from_slice(&b[off..off + width]);
                u64::from_le_bytes(a)
            }
            Endian::Big => {
                a[8 - width..].copy_from_slice(&b[off..off + width]);
                u64::from_be_bytes(a)
            }
        }
    }

    /// Writes a `u16` at `off`.
    pub fn put_u16(self, b: &mut [u8], off: usize, v: u16) {
        let a = match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        b[off..off + 2].copy_from_slice(&a);
    }

    /// Writes a `u32` at `off`.
    pub fn put_u32(self, b: &mut [u8], off: usize, v: u32) {
        let a = match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        b[off..off + 4].copy_from_slice(&a);
    }

    /// Writes a `u64` at `off`.
    pub fn put_u64(self, b: &mut [u8], off: usize, v: u64) {
        let a = match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        };
        b[off..off + 8].copy_from_slice(&a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_integers_widen_in_either_order() {
        let b = [0x12, 0x34, 0x56, 0x78];
        assert_eq!(Endian::Little.uint(&b, 1, 2), 0x5634);
        assert_eq!(Endian::Big.uint(&b, 1, 2), 0x3456);
        assert_eq!(Endian::Big.uint(&b, 0, 1), 0x12);
        assert_eq!(Endian::Big.uint(&b, 0, 4), u64::from(Endian::Big.u32(&b, 0)));
    }

    #[test]
    fn round_trips_both_orders() {
        let mut b = [0u8; 16];
        Endian::Big.put_u32(&mut b, 0, 0x0102_0304);
        assert_eq!(&b[..4], &[1, 2, 3, 4]);
        Endian::Little.put_u64(&mut b, 8, 0x0102_0304_0506_0708);
        assert_eq!(b[8], 8);
        assert_eq!(Endian::Little.u64(&b, 8), 0x0102_0304_0506_0708);
        assert_eq!(Endian::Big.u16(&b, 0), 0x0102);
    }
}
