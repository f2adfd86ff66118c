//! [`Object`]: one kernel structure read whole from the dump, its fields
//! found by name through BTF (docs/kernel-map.md §4).

use vmdump_format::btf::{Btf, Member};
use vmdump_format::elf::Endian;

use super::error::{MapError, read_error};
use crate::xlat::{KernelMemory, PhysRead};

/// Larger than any structure a dump tool reads (`struct task_struct` is
/// about 10 KiB with Debian's configuration).
const MAX_OBJECT: u64 = 1 << 20;

/// A struct or union of the kernel, as its bytes were at the crash.
#[derive(Debug)]
pub struct Object<'t> {
    btf: &'t Btf,
    type_name: String,
    type_id: u32,
    vaddr: u64,
    bytes: Vec<u8>,
    endian: Endian,
}

impl<'t> Object<'t> {
    /// Reads the struct or union `type_name` at `vaddr`.
    ///
    /// # Errors
    /// BTF has no such type, or the read fails.
    pub fn read<R: PhysRead + ?Sized>(
        memory: &KernelMemory<'_, R>,
        btf: &'t Btf,
        type_name: &str,
        vaddr: u64,
    ) -> Result<Self, MapError> {
        let t = btf
            .aggregate(type_name)
            .ok_or_else(|| MapError::NoType(format!("struct or union {type_name}")))?;
        let size = btf
            .size_of(t.id)
            .filter(|&s| s <= MAX_OBJECT)
            .ok_or_else(|| MapError::NoType(format!("a size of {type_name} up to {MAX_OBJECT} bytes")))?;
        let mut bytes = vec![0; size as usize];
        memory.read_virt(vaddr, &mut bytes).map_err(read_error("kernel structures", "a structure", vaddr))?;
        Ok(Object {
            btf,
            type_name: type_name.to_owned(),
            type_id: t.id,
            vaddr,
            bytes,
            endian: memory.arch().endian(),
        })
    }

    /// Where it is.
    pub fn address(&self) -> u64 {
        self.vaddr
    }

    /// The member at `path` (`a.b.c`).
    ///
    /// # Errors
    /// BTF has no such member.
    pub fn member(&self, path: &str) -> Result<Member, MapError> {
        let t = self.btf.get(self.type_id).expect("the object's own type");
        self.btf
            .member(t, path)
            .ok_or_else(|| MapError::NoType(format!("member {path} in {}", self.type_name)))
    }

    /// The address of the member at `path`.
    ///
    /// # Errors
    /// As [`Object::member`].
    pub fn address_of(&self, path: &str) -> Result<u64, MapError> {
        Ok(self.vaddr + self.member(path)?.offset())
    }

    /// The bytes of the member at `path`.
    ///
    /// # Errors
    /// As [`Object::member`], or a member with no size.
    pub fn bytes(&self, path: &str) -> Result<&[u8], MapError> {
        let member = self.member(path)?;
        let size =
            self.btf.size_of(member.type_id).ok_or_else(|| MapError::NoType(format!("a size of {path}")))?;
        let start = member.offset() as usize;
        self.bytes
            .get(start..start + size as usize)
            .ok_or_else(|| MapError::NoType(format!("{path} within {}", self.type_name)))
    }

    /// The member at `path` as an unsigned integer (of 1, 2, 4 or 8
    /// bytes, in the machine's byte order; a bitfield's bits alone, on
    /// little-endian machines, which number bits from the lowest).
    ///
    /// # Errors
    /// As [`Object::bytes`], or a member of another size.
    pub fn unsigned(&self, path: &str) -> Result<u64, MapError> {
        let member = self.member(path)?;
        if member.bitfield_size > 0 {
            if self.endian == Endian::Big {
                return Err(MapError::NoType(format!("{path}: bitfields of big-endian machines")));
            }
            let bytes = &self.bytes[member.offset() as usize..];
            let word = self.endian.u64(&[bytes, &[0; 8]].concat(), 0);
            let shift = member.bit_offset % 8;
            return Ok((word >> shift) & ((1u64 << member.bitfield_size) - 1));
        }
        let bytes = self.bytes(path)?;
        Ok(match bytes.len() {
            1 => u64::from(bytes[0]),
            2 => u64::from(self.endian.u16(bytes, 0)),
            4 => u64::from(self.endian.u32(bytes, 0)),
            8 => self.endian.u64(bytes, 0),
            n => return Err(MapError::NoType(format!("{path} as an integer: {n} bytes"))),
        })
    }

    /// The member at `path` as a NUL-terminated string within it (a
    /// `char` array, such as `module.name` or `task_struct.comm`).
    ///
    /// # Errors
    /// As [`Object::bytes`].
    pub fn c_string(&self, path: &str) -> Result<String, MapError> {
        let bytes = self.bytes(path)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}
