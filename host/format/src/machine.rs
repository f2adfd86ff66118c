//! The machines whose dumps vmdump writes, and what the file formats say
//! about each: its ELF `e_machine`, byte order, the name the kernel puts in
//! `utsname.machine` (which libkdumpfile reports as `arch.name` of a
//! kdump-compressed file) and what the kdump sub header's `phys_base`
//! holds (kdump-format.md §1.2, §1.5, §5.6; docs/arm64.md §5, §6).
//!
//! Address translation, which needs more than these facts, is the host's
//! (`vmdump::xlat::Arch`).

use crate::elf::Endian;
use crate::vmcoreinfo::VmcoreInfo;

/// `e_machine` of x86_64.
pub const EM_X86_64: u16 = 62;
/// `e_machine` of arm64 (AArch64).
pub const EM_AARCH64: u16 = 183;
/// `e_machine` of 64-bit PowerPC (either byte order).
pub const EM_PPC64: u16 = 21;
/// `e_machine` of RISC-V.
pub const EM_RISCV: u16 = 243;
/// `e_machine` of IBM S/390 and z/Architecture (s390x).
pub const EM_S390: u16 = 22;

/// A machine vmdump dumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Machine {
    /// x86_64 (AMD64, Intel 64).
    X86_64,
    /// arm64 (AArch64), little-endian.
    Aarch64,
    /// 64-bit POWER, little-endian (Debian's ppc64el, RHEL's ppc64le).
    Ppc64le,
    /// 64-bit RISC-V.
    Riscv64,
    /// IBM Z (s390x), big-endian: its dumps are written in its byte order,
    /// as makedumpfile writes them there (docs/s390x.md §4).
    S390x,
}

impl Machine {
    /// Every machine, in the order messages list them.
    pub const ALL: [Machine; 5] =
        [Machine::X86_64, Machine::Aarch64, Machine::Ppc64le, Machine::Riscv64, Machine::S390x];

    /// The names of [`Machine::ALL`], for messages.
    pub const SUPPORTED: &'static str = "x86_64 (e_machine 62), aarch64 (183, little-endian), ppc64le (21, little-endian), riscv64 (243), s390x (22, big-endian)";

    /// The page size Linux always uses on the machine, where it has only
    /// one (x86_64, riscv64, s390x: 4 KiB); arm64 and ppc64 have several.
    pub fn fixed_page_size(self) -> Option<u64> {
        match self {
            Machine::X86_64 | Machine::Riscv64 | Machine::S390x => Some(4096),
            Machine::Aarch64 | Machine::Ppc64le => None,
        }
    }

    /// The machine of an ELF vmcore; `None` for others, and for a byte
    /// order the machine's Linux does not use here (big-endian arm64).
    pub fn from_elf(e_machine: u16, endian: Endian) -> Option<Machine> {
        Machine::ALL.into_iter().find(|m| m.e_machine() == e_machine && m.endian() == endian)
    }

    /// The machine whose `utsname.machine` is `name` (a kdump file's
    /// header); `arm64` is taken for `aarch64`.
    pub fn from_utsname(name: &[u8]) -> Option<Machine> {
        match name {
            b"arm64" => Some(Machine::Aarch64),
            _ => Machine::ALL.into_iter().find(|m| m.name().as_bytes() == name),
        }
    }

    /// The machine VMCOREINFO's arch-specific keys point to, for inputs
    /// that do not say (a kdump file with an empty utsname): arm64
    /// exports `NUMBER(kimage_voffset)` and `NUMBER(VA_BITS)`, x86_64
    /// neither; ppc64 `NUMBER(RADIX_MMU)` and `SYMBOL(mmu_psize_defs)`;
    /// riscv64 `NUMBER(va_kernel_pa_offset)` and `NUMBER(KERNEL_LINK_ADDR)`
    /// (and `NUMBER(VA_BITS)`, so it is asked first); s390x
    /// `SYMBOL(lowcore_ptr)`. `None` when it has neither arm64 key nor x86_64's
    /// `SYMBOL(init_top_pgt)` (or `init_level4_pgt`).
    pub fn from_vmcoreinfo(info: &VmcoreInfo) -> Option<Machine> {
        if info.number("va_kernel_pa_offset").is_some() || info.number("KERNEL_LINK_ADDR").is_some() {
            Some(Machine::Riscv64)
        } else if info.symbol("lowcore_ptr").is_some() {
            Some(Machine::S390x)
        } else if info.number("RADIX_MMU").is_some() || info.symbol("mmu_psize_defs").is_some() {
            Some(Machine::Ppc64le)
        } else if info.number("kimage_voffset").is_some() || info.number("VA_BITS").is_some() {
            Some(Machine::Aarch64)
        } else if info.symbol("init_top_pgt").is_some() || info.symbol("init_level4_pgt").is_some() {
            Some(Machine::X86_64)
        } else {
            None
        }
    }

    /// `e_machine`.
    pub fn e_machine(self) -> u16 {
        match self {
            Machine::X86_64 => EM_X86_64,
            Machine::Aarch64 => EM_AARCH64,
            Machine::Ppc64le => EM_PPC64,
            Machine::Riscv64 => EM_RISCV,
            Machine::S390x => EM_S390,
        }
    }

    /// Whether C's `char` is signed in the machine's Linux ABI: on x86_64,
    /// not on arm64 (nor on ppc64, s390x or riscv64). makedumpfile, run in
    /// the machine's capture kernel, prints a byte of its kernel log
    /// through a `char`: this decides how (`vmdump::dmesg`).
    pub fn c_char_is_signed(self) -> bool {
        match self {
            Machine::X86_64 => true,
            Machine::Aarch64 | Machine::Ppc64le | Machine::Riscv64 | Machine::S390x => false,
        }
    }

    /// Byte order of its memory and of its dump files.
    pub fn endian(self) -> Endian {
        match self {
            Machine::S390x => Endian::Big,
            _ => Endian::Little,
        }
    }

    /// The kernel's `UTS_MACHINE` (`uname -m`): what makedumpfile's header
    /// carries in `utsname.machine` and libkdumpfile calls `arch.name`.
    pub fn name(self) -> &'static str {
        match self {
            Machine::X86_64 => "x86_64",
            Machine::Aarch64 => "aarch64",
            Machine::Ppc64le => "ppc64le",
            Machine::Riscv64 => "riscv64",
            Machine::S390x => "s390x",
        }
    }

    /// What makedumpfile writes into the sub header's `phys_base`:
    /// `NUMBER(phys_base)` on x86_64 (negative with KASLR), the linear
    /// map's `NUMBER(PHYS_OFFSET)` on arm64 (negative when the kernel
    /// randomised the linear map). `None` when VMCOREINFO lacks it.
    pub fn header_phys_base(self, info: &VmcoreInfo) -> Option<i64> {
        match self {
            Machine::X86_64 => info.phys_base(),
            Machine::Aarch64 => info.number("PHYS_OFFSET"),
            // The kernel runs at physical 0: makedumpfile leaves it 0.
            Machine::Ppc64le => Some(0),
            Machine::Riscv64 => info.number("phys_ram_base"),
            // Physical memory from 0, the kernel's addresses its physical
            // ones (docs/s390x.md §3).
            Machine::S390x => Some(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_elf_and_names() {
        assert_eq!(Machine::from_elf(62, Endian::Little), Some(Machine::X86_64));
        assert_eq!(Machine::from_elf(183, Endian::Little), Some(Machine::Aarch64));
        assert_eq!(Machine::from_elf(183, Endian::Big), None, "big-endian arm64");
        assert_eq!(Machine::from_elf(21, Endian::Big), None, "big-endian ppc64");
        assert_eq!(Machine::from_elf(21, Endian::Little), Some(Machine::Ppc64le));
        assert_eq!(Machine::from_elf(243, Endian::Little), Some(Machine::Riscv64));
        assert_eq!(Machine::from_elf(22, Endian::Big), Some(Machine::S390x));
        assert_eq!(Machine::from_elf(22, Endian::Little), None, "little-endian s390x");
        assert_eq!((Machine::S390x.e_machine(), Machine::S390x.endian()), (EM_S390, Endian::Big));
        for m in Machine::ALL {
            assert_eq!(Machine::from_utsname(m.name().as_bytes()), Some(m));
            assert!(Machine::SUPPORTED.contains(m.name()));
        }
        assert_eq!(Machine::from_utsname(b"arm64"), Some(Machine::Aarch64));
        assert_eq!(Machine::from_utsname(b""), None);
    }

    #[test]
    fn vmcoreinfo_keys_tell_the_machine_and_its_phys_base() {
        let arm64 = VmcoreInfo::parse(
            b"NUMBER(VA_BITS)=48\nNUMBER(kimage_voffset)=0xffffa532f3e00000\nNUMBER(PHYS_OFFSET)=0xfffff64b00000000\n",
        )
        .unwrap();
        assert_eq!(Machine::from_vmcoreinfo(&arm64), Some(Machine::Aarch64));
        assert_eq!(Machine::Aarch64.header_phys_base(&arm64), Some(0xffff_f64b_0000_0000u64 as i64));
        let x86 = VmcoreInfo::parse(b"SYMBOL(init_top_pgt)=ffffffff9d40a000\nNUMBER(phys_base)=-478150656\n")
            .unwrap();
        assert_eq!(Machine::from_vmcoreinfo(&x86), Some(Machine::X86_64));
        assert_eq!(Machine::X86_64.header_phys_base(&x86), Some(-478_150_656));
        let s390x = VmcoreInfo::parse(b"SYMBOL(lowcore_ptr)=1a3e1b8\nLENGTH(lowcore_ptr)=256\n").unwrap();
        assert_eq!(Machine::from_vmcoreinfo(&s390x), Some(Machine::S390x));
        assert_eq!(Machine::from_vmcoreinfo(&VmcoreInfo::parse(b"PAGESIZE=4096\n").unwrap()), None);
    }
}
