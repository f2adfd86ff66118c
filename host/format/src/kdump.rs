//! kdump-compressed ("diskdump") on-disk structures for 64-bit machines
//! (x86_64, arm64, ppc64le, riscv64 and s390x share the layout; s390x's
//! integers are big-endian, as makedumpfile writes them there), with explicit offsets
//! (kdump-format.md §1.2, §1.3, §1.5, §1.8; layout in [`Layout`], §1.1,
//! §1.7, §1.13).
//!
//! Nothing here relies on the host's `repr(C)`: every field is encoded at
//! the offset the tables of §1.2/§1.5/§1.8 give for x86_64.

mod layout;
pub mod reader;
pub mod writer;

pub use layout::Layout;
pub use reader::{KdumpReader, StoredPage};
pub use writer::{KdumpWriter, PageRecord, Preamble, WriteError};

use crate::FormatError;
use crate::elf::Endian;
use crate::machine::Machine;
use crate::vmcoreinfo::VmcoreInfo;

/// `disk_dump_header.signature`: "KDUMP" and three spaces, no NUL.
pub const KDUMP_SIGNATURE: [u8; 8] = *b"KDUMP   ";
/// The header version makedumpfile writes (§1.4).
pub const HEADER_VERSION: i32 = 6;
/// Size of `disk_dump_header` on x86_64.
pub const DISK_DUMP_HEADER_SIZE: usize = 464;
/// Size of `kdump_sub_header` (v6) on x86_64.
pub const SUB_HEADER_SIZE: usize = 104;
/// Size of `page_desc` on every ABI.
pub const PAGE_DESC_SIZE: usize = 24;
/// Length of each `new_utsname` field.
pub const UTSNAME_FIELD_LEN: usize = 65;

/// Status / page flag: pages compressed with zlib.
pub const DUMP_DH_COMPRESSED_ZLIB: u32 = 0x01;
/// Status / page flag: LZO1X.
pub const DUMP_DH_COMPRESSED_LZO: u32 = 0x02;
/// Status / page flag: Snappy (raw block).
pub const DUMP_DH_COMPRESSED_SNAPPY: u32 = 0x04;
/// Status flag: the dump was truncated (ENOSPC or size limit, §1.11).
pub const DUMP_DH_COMPRESSED_INCOMPLETE: u32 = 0x08;
/// Status flag: `-e`, vmemmap pages of excluded ranges dropped.
pub const DUMP_DH_EXCLUDED_VMEMMAP: u32 = 0x10;
/// Status / page flag: zstd frame.
pub const DUMP_DH_COMPRESSED_ZSTD: u32 = 0x20;
/// All compression bits.
pub const DUMP_DH_COMPRESSION_MASK: u32 =
    DUMP_DH_COMPRESSED_ZLIB | DUMP_DH_COMPRESSED_LZO | DUMP_DH_COMPRESSED_SNAPPY | DUMP_DH_COMPRESSED_ZSTD;

fn put(b: &mut [u8], off: usize, v: &[u8]) {
    b[off..off + v.len()].copy_from_slice(v);
}

fn check_len(buf: &[u8], need: usize, what: &'static str) -> Result<(), FormatError> {
    if buf.len() < need {
        return Err(FormatError::BadKdump {
            what,
            offset: 0,
            reason: format!("need {need} bytes, got {}", buf.len()),
        });
    }
    Ok(())
}

/// `new_utsname` as stored in the header: six NUL-padded 65-byte fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utsname {
    /// The fields in order: sysname, nodename, release, version, machine, domainname.
    pub fields: [[u8; UTSNAME_FIELD_LEN]; 6],
}

impl Default for Utsname {
    fn default() -> Self {
        Utsname { fields: [[0; UTSNAME_FIELD_LEN]; 6] }
    }
}

impl Utsname {
    /// Bytes of a kernel `struct new_utsname`, as stored in the header.
    pub const SIZE: usize = 6 * UTSNAME_FIELD_LEN;
    /// Index of `sysname`.
    pub const SYSNAME: usize = 0;
    /// Index of `nodename`.
    pub const NODENAME: usize = 1;
    /// Index of `release`.
    pub const RELEASE: usize = 2;
    /// Index of `version`.
    pub const VERSION: usize = 3;
    /// Index of `machine`.
    pub const MACHINE: usize = 4;
    /// Index of `domainname`.
    pub const DOMAINNAME: usize = 5;

    /// A kernel's `struct new_utsname` (`init_uts_ns.name`), copied as it
    /// is, as makedumpfile copies it; `None` unless it looks like one: its
    /// sysname is "Linux", every field ends with a NUL, and its release is
    /// `osrelease` (VMCOREINFO's, when known).
    pub fn from_kernel(raw: &[u8; Self::SIZE], osrelease: Option<&str>) -> Option<Self> {
        let mut u = Utsname::default();
        for (field, bytes) in u.fields.iter_mut().zip(raw.chunks_exact(UTSNAME_FIELD_LEN)) {
            field.copy_from_slice(bytes);
        }
        let terminated = u.fields.iter().all(|f| f.contains(&0));
        let release_agrees = osrelease.is_none_or(|r| u.get(Self::RELEASE) == r.as_bytes());
        (terminated && u.get(Self::SYSNAME) == b"Linux" && release_agrees).then_some(u)
    }

    /// Sets field `index` to `value`, truncated to 64 bytes (one NUL kept).
    pub fn set(&mut self, index: usize, value: &str) {
        let field = &mut self.fields[index];
        field.fill(0);
        let n = value.len().min(UTSNAME_FIELD_LEN - 1);
        field[..n].copy_from_slice(&value.as_bytes()[..n]);
    }

    /// Field `index` up to its first NUL.
    pub fn get(&self, index: usize) -> &[u8] {
        let f = &self.fields[index];
        &f[..f.iter().position(|&b| b == 0).unwrap_or(f.len())]
    }

    /// What can be filled from VMCOREINFO alone, when the kernel's own
    /// `init_uts_ns.name` cannot be read ([`Utsname::from_kernel`]):
    /// `sysname` "Linux", `release` from `OSRELEASE=` and `machine` the
    /// machine's name ([`Machine::name`]; empty when the machine is not
    /// one vmdump knows); nodename, version and domainname stay empty.
    pub fn from_vmcoreinfo(info: &VmcoreInfo, machine: Option<Machine>) -> Self {
        let mut u = Utsname::default();
        u.set(Self::SYSNAME, "Linux");
        if let Some(release) = info.osrelease() {
            u.set(Self::RELEASE, release);
        }
        if let Some(machine) = machine {
            u.set(Self::MACHINE, machine.name());
        }
        u
    }
}

/// `disk_dump_header`, x86_64 layout (§1.2): 464 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskDumpHeader {
    /// Offset 0: [`KDUMP_SIGNATURE`].
    pub signature: [u8; 8],
    /// Offset 8: [`HEADER_VERSION`].
    pub header_version: i32,
    /// Offset 12: six 65-byte fields.
    pub utsname: Utsname,
    /// Offset 408: `timestamp.tv_sec` (CRASHTIME).
    pub timestamp_sec: i64,
    /// Offset 416: `timestamp.tv_usec` (0).
    pub timestamp_usec: i64,
    /// Offset 424: status flags (`DUMP_DH_*`).
    pub status: u32,
    /// Offset 428: block size = page size.
    pub block_size: i32,
    /// Offset 432: blocks of sub header + notes.
    pub sub_hdr_size: i32,
    /// Offset 436: blocks of both bitmaps.
    pub bitmap_blocks: u32,
    /// Offset 440: number of pfns, saturated to `u32::MAX`.
    pub max_mapnr: u32,
    /// Offset 444: unused (0).
    pub total_ram_blocks: u32,
    /// Offset 448: unused (0).
    pub device_blocks: u32,
    /// Offset 452: unused (0).
    pub written_blocks: u32,
    /// Offset 456: unused (0).
    pub current_cpu: u32,
    /// Offset 460: number of NT_PRSTATUS notes.
    pub nr_cpus: i32,
    /// The byte order of every integer in the file: the dumped machine's.
    pub endian: Endian,
}

/// Headers of versions above this are not taken for this byte order's.
const MAX_PLAUSIBLE_VERSION: u32 = 0xffff;

/// The byte order of a header: the one in which its version is a small
/// number (makedumpfile writes 6; the other order reads 0x0600_0000).
fn header_byte_order(buf: &[u8]) -> Result<Endian, FormatError> {
    [Endian::Little, Endian::Big]
        .into_iter()
        .find(|e| (1..=MAX_PLAUSIBLE_VERSION).contains(&e.u32(buf, 8)))
        .ok_or_else(|| FormatError::BadKdump {
            what: "disk_dump_header",
            offset: 8,
            reason: format!(
                "header_version {:#x} is no version in either byte order",
                Endian::Little.u32(buf, 8)
            ),
        })
}

impl DiskDumpHeader {
    /// Encodes the 464 header bytes.
    pub fn encode(&self) -> [u8; DISK_DUMP_HEADER_SIZE] {
        let (mut b, e) = ([0u8; DISK_DUMP_HEADER_SIZE], self.endian);
        put(&mut b, 0, &self.signature);
        e.put_u32(&mut b, 8, self.header_version as u32);
        for (i, f) in self.utsname.fields.iter().enumerate() {
            put(&mut b, 12 + i * UTSNAME_FIELD_LEN, f);
        }
        e.put_u64(&mut b, 408, self.timestamp_sec as u64);
        e.put_u64(&mut b, 416, self.timestamp_usec as u64);
        let words = [
            self.status,
            self.block_size as u32,
            self.sub_hdr_size as u32,
            self.bitmap_blocks,
            self.max_mapnr,
            self.total_ram_blocks,
            self.device_blocks,
            self.written_blocks,
            self.current_cpu,
            self.nr_cpus as u32,
        ];
        for (i, &w) in words.iter().enumerate() {
            e.put_u32(&mut b, 424 + 4 * i, w);
        }
        b
    }

    /// Decodes a header from at least 464 bytes, in the byte order in which
    /// its version is a small number.
    ///
    /// # Errors
    ///
    /// [`FormatError::BadKdump`] if `buf` is short, the signature is not
    /// "KDUMP   " or the version is no version in either byte order.
    pub fn decode(buf: &[u8]) -> Result<Self, FormatError> {
        check_len(buf, DISK_DUMP_HEADER_SIZE, "disk_dump_header")?;
        let signature: [u8; 8] = buf[..8].try_into().expect("8 bytes");
        if signature != KDUMP_SIGNATURE {
            let reason = format!("signature {:?} is not \"KDUMP   \"", String::from_utf8_lossy(&signature));
            return Err(FormatError::BadKdump { what: "disk_dump_header", offset: 0, reason });
        }
        let mut utsname = Utsname::default();
        for (i, f) in utsname.fields.iter_mut().enumerate() {
            f.copy_from_slice(&buf[12 + i * UTSNAME_FIELD_LEN..12 + (i + 1) * UTSNAME_FIELD_LEN]);
        }
        let e = header_byte_order(buf)?;
        let w = |i: usize| e.u32(buf, 424 + 4 * i);
        Ok(DiskDumpHeader {
            signature,
            header_version: e.u32(buf, 8) as i32,
            utsname,
            timestamp_sec: e.u64(buf, 408) as i64,
            timestamp_usec: e.u64(buf, 416) as i64,
            status: w(0),
            block_size: w(1) as i32,
            sub_hdr_size: w(2) as i32,
            bitmap_blocks: w(3),
            max_mapnr: w(4),
            total_ram_blocks: w(5),
            device_blocks: w(6),
            written_blocks: w(7),
            current_cpu: w(8),
            nr_cpus: w(9) as i32,
            endian: e,
        })
    }

    /// Sets `utsname` and `timestamp_sec` from VMCOREINFO
    /// ([`Utsname::from_vmcoreinfo`]; timestamp = `CRASHTIME`, 0 if absent).
    pub fn fill_from_vmcoreinfo(&mut self, info: &VmcoreInfo, machine: Option<Machine>) {
        self.utsname = Utsname::from_vmcoreinfo(info, machine);
        self.timestamp_sec = info.crashtime().unwrap_or(0);
        self.timestamp_usec = 0;
    }
}

/// `kdump_sub_header` v6, x86_64 layout (§1.5): 104 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubHeader {
    /// Offset 0: kernel relocation offset (two's complement of a negative phys_base).
    pub phys_base: u64,
    /// Offset 8: effective dump level.
    pub dump_level: i32,
    /// Offset 12: 1 in `--split` pieces.
    pub split: i32,
    /// Offset 16: split start pfn (saturated to u32::MAX).
    pub start_pfn: u64,
    /// Offset 24: split end pfn (saturated).
    pub end_pfn: u64,
    /// Offset 32: file offset of the VMCOREINFO text.
    pub offset_vmcoreinfo: u64,
    /// Offset 40: its length.
    pub size_vmcoreinfo: u64,
    /// Offset 48: file offset of the notes copy.
    pub offset_note: u64,
    /// Offset 56: notes length.
    pub size_note: u64,
    /// Offset 64: file offset of eraseinfo (0 if none).
    pub offset_eraseinfo: u64,
    /// Offset 72: eraseinfo length.
    pub size_eraseinfo: u64,
    /// Offset 80: split start pfn (full).
    pub start_pfn_64: u64,
    /// Offset 88: split end pfn (full).
    pub end_pfn_64: u64,
    /// Offset 96: number of pfns (full).
    pub max_mapnr_64: u64,
}

impl SubHeader {
    fn words(&self) -> [u64; 12] {
        [
            self.start_pfn,
            self.end_pfn,
            self.offset_vmcoreinfo,
            self.size_vmcoreinfo,
            self.offset_note,
            self.size_note,
            self.offset_eraseinfo,
            self.size_eraseinfo,
            self.start_pfn_64,
            self.end_pfn_64,
            self.max_mapnr_64,
            0,
        ]
    }

    /// Encodes the 104 sub-header bytes in byte order `e`.
    pub fn encode(&self, e: Endian) -> [u8; SUB_HEADER_SIZE] {
        let mut b = [0u8; SUB_HEADER_SIZE];
        e.put_u64(&mut b, 0, self.phys_base);
        e.put_u32(&mut b, 8, self.dump_level as u32);
        e.put_u32(&mut b, 12, self.split as u32);
        for (i, &w) in self.words().iter().take(11).enumerate() {
            e.put_u64(&mut b, 16 + 8 * i, w);
        }
        b
    }

    /// Decodes a sub header from at least 104 bytes in byte order `e`.
    ///
    /// # Errors
    ///
    /// [`FormatError::BadKdump`] if `buf` is short.
    pub fn decode(buf: &[u8], e: Endian) -> Result<Self, FormatError> {
        check_len(buf, SUB_HEADER_SIZE, "kdump_sub_header")?;
        let q = |i: usize| e.u64(buf, 16 + 8 * i);
        Ok(SubHeader {
            phys_base: e.u64(buf, 0),
            dump_level: e.u32(buf, 8) as i32,
            split: e.u32(buf, 12) as i32,
            start_pfn: q(0),
            end_pfn: q(1),
            offset_vmcoreinfo: q(2),
            size_vmcoreinfo: q(3),
            offset_note: q(4),
            size_note: q(5),
            offset_eraseinfo: q(6),
            size_eraseinfo: q(7),
            start_pfn_64: q(8),
            end_pfn_64: q(9),
            max_mapnr_64: q(10),
        })
    }
}

/// `page_desc` (§1.8): 24 bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PageDesc {
    /// Offset 0: absolute file offset of the page data (0 = lost in an incomplete dump).
    pub offset: u64,
    /// Offset 8: stored bytes (≤ block size).
    pub size: u32,
    /// Offset 12: 0 = raw, else one `DUMP_DH_COMPRESSED_*` bit.
    pub flags: u32,
    /// Offset 16: always 0.
    pub page_flags: u64,
}

impl PageDesc {
    /// Encodes the 24 descriptor bytes in byte order `e`.
    pub fn encode(&self, e: Endian) -> [u8; PAGE_DESC_SIZE] {
        let mut b = [0u8; PAGE_DESC_SIZE];
        e.put_u64(&mut b, 0, self.offset);
        e.put_u32(&mut b, 8, self.size);
        e.put_u32(&mut b, 12, self.flags);
        e.put_u64(&mut b, 16, self.page_flags);
        b
    }

    /// Decodes a descriptor from at least 24 bytes in byte order `e`.
    ///
    /// # Errors
    ///
    /// [`FormatError::BadKdump`] if `buf` is short.
    pub fn decode(buf: &[u8], e: Endian) -> Result<Self, FormatError> {
        check_len(buf, PAGE_DESC_SIZE, "page_desc")?;
        Ok(PageDesc {
            offset: e.u64(buf, 0),
            size: e.u32(buf, 8),
            flags: e.u32(buf, 12),
            page_flags: e.u64(buf, 16),
        })
    }
}

#[cfg(test)]
mod tests;
