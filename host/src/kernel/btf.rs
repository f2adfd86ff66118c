//! The kernel's types: its BTF, read from `__start_BTF` to `__stop_BTF`
//! (kallsyms gives both), parsed by [`vmdump_format::btf`]
//! (docs/kernel-map.md §2).

use std::io;
use std::sync::Arc;

use vmdump_format::btf::{Btf, MAX_BTF, Member};
use vmdump_format::read_at::ReadAt;

use super::error::{MapError, read_error};
use super::kallsyms::{Kallsyms, SomeSymbols};
use super::modules::Module;
use crate::xlat::{KernelMemory, PhysRead};

const TABLE: &str = "BTF";

/// The symbols that bound the kernel's BTF.
pub const BOUNDS: [&str; 2] = ["__start_BTF", "__stop_BTF"];

/// The values of the enumerators `names` in the kernel's BTF, found by
/// streaming it (a window at a time, none of it kept: what a dump needs
/// of the 6 MiB); `None` for a name no enum has.
///
/// # Errors
/// As [`KernelTypes::read`].
pub fn find_enumerators<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    symbols: &SomeSymbols,
    names: &[&str],
) -> Result<Vec<Option<i64>>, MapError> {
    let (start, len) = vmlinux_range(|name| symbols.lookup(name), symbols.has_data_symbols())?;
    let blob = KernelBytes { memory, start, len };
    vmdump_format::btf::find_enumerators(&blob, names).map_err(|cause| MapError::Btf {
        owner: "vmlinux".into(),
        vaddr: start,
        cause,
    })
}

/// Where the kernel's BTF is, and its length, from the symbols that bound
/// it (`lookup` gives their addresses).
fn vmlinux_range(lookup: impl Fn(&str) -> Option<u64>, data_symbols: bool) -> Result<(u64, u64), MapError> {
    let why = match data_symbols {
        true => "a kernel built without CONFIG_DEBUG_INFO_BTF",
        false => "its kallsyms lists functions alone: a kernel built without CONFIG_KALLSYMS_ALL",
    };
    let bound = |symbol: &str| {
        lookup(symbol).ok_or_else(|| MapError::MissingSymbol {
            table: TABLE,
            symbol: format!("{symbol} in kallsyms ({why})"),
        })
    };
    let (start, stop) = (bound(BOUNDS[0])?, bound(BOUNDS[1])?);
    let len = stop.checked_sub(start).filter(|&len| len > 0 && len <= MAX_BTF as u64).ok_or_else(|| {
        MapError::Corrupt {
            table: TABLE,
            what: "__start_BTF to __stop_BTF",
            vaddr: start,
            detail: format!("a range of {:#x} bytes", stop.wrapping_sub(start)),
        }
    })?;
    Ok((start, len))
}

/// `len` bytes of kernel virtual memory from `start`, read where asked.
struct KernelBytes<'m, 'a, R: PhysRead + ?Sized> {
    memory: &'m KernelMemory<'a, R>,
    start: u64,
    len: u64,
}

impl<R: PhysRead + ?Sized> ReadAt for KernelBytes<'_, '_, R> {
    fn size(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if offset.checked_add(buf.len() as u64).is_none_or(|end| end > self.len) {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "beyond __stop_BTF"));
        }
        self.memory.read_virt(self.start + offset, buf).map_err(io::Error::other)
    }
}

/// The kernel's BTF.
#[derive(Debug)]
pub struct KernelTypes {
    vmlinux: Arc<Btf>,
    vaddr: u64,
}

impl KernelTypes {
    /// Reads and parses the kernel's BTF.
    ///
    /// # Errors
    /// kallsyms lacks `__start_BTF` or `__stop_BTF` (a kernel built
    /// without CONFIG_DEBUG_INFO_BTF), the range is empty or too large, a
    /// read fails, or the bytes do not parse.
    pub fn read<R: PhysRead + ?Sized>(
        memory: &KernelMemory<'_, R>,
        symbols: &Kallsyms,
    ) -> Result<Self, MapError> {
        let (start, len) =
            vmlinux_range(|name| symbols.lookup(name).map(|s| s.address), symbols.has_data_symbols())?;
        let mut bytes = vec![0; len as usize];
        memory.read_virt(start, &mut bytes).map_err(read_error(TABLE, "vmlinux's BTF", start))?;
        let vmlinux = Btf::parse(bytes).map_err(|cause| MapError::Btf {
            owner: "vmlinux".into(),
            vaddr: start,
            cause,
        })?;
        Ok(KernelTypes { vmlinux: Arc::new(vmlinux), vaddr: start })
    }

    /// The kernel's own BTF.
    pub fn vmlinux(&self) -> &Btf {
        &self.vmlinux
    }

    /// Where it is in the kernel's memory.
    pub fn address(&self) -> u64 {
        self.vaddr
    }

    /// The BTF of `module`, split on the kernel's.
    ///
    /// # Errors
    /// The module has no BTF, the read fails, or it does not parse.
    pub fn read_module<R: PhysRead + ?Sized>(
        &self,
        memory: &KernelMemory<'_, R>,
        module: &Module,
    ) -> Result<Btf, MapError> {
        let missing =
            || MapError::NoType(format!("BTF of module {} (CONFIG_DEBUG_INFO_BTF_MODULES)", module.name));
        let (start, len) = module.btf_range().ok_or_else(missing)?;
        if len > MAX_BTF as u64 {
            let detail = format!("{len} bytes");
            return Err(MapError::Corrupt {
                table: TABLE,
                what: "module.btf_data_size",
                vaddr: module.address(),
                detail,
            });
        }
        let mut bytes = vec![0; len as usize];
        memory.read_virt(start, &mut bytes).map_err(read_error(TABLE, "a module's BTF", start))?;
        Btf::parse_split(bytes, self.vmlinux.clone()).map_err(|cause| MapError::Btf {
            owner: module.name.clone(),
            vaddr: start,
            cause,
        })
    }

    /// The size of the struct, union or typedef `name`.
    ///
    /// # Errors
    /// BTF has no such type.
    pub fn size_of(&self, name: &str) -> Result<u64, MapError> {
        let t = self
            .vmlinux
            .aggregate(name)
            .ok_or_else(|| MapError::NoType(format!("struct or union {name}")))?;
        self.vmlinux.size_of(t.id).ok_or_else(|| MapError::NoType(format!("a size of {name}")))
    }

    /// The member `path` (`a.b.c`) of the struct or union `name`.
    ///
    /// # Errors
    /// BTF has no such type or member.
    pub fn member(&self, name: &str, path: &str) -> Result<Member, MapError> {
        let t = self
            .vmlinux
            .aggregate(name)
            .ok_or_else(|| MapError::NoType(format!("struct or union {name}")))?;
        self.vmlinux.member(t, path).ok_or_else(|| MapError::NoType(format!("member {path} in {name}")))
    }

    /// The value of the enumerator `name` (of any enum).
    ///
    /// # Errors
    /// BTF has no such enumerator.
    pub fn enumerator(&self, name: &str) -> Result<i64, MapError> {
        self.vmlinux
            .enumerator(name)
            .map(|(value, _)| value)
            .ok_or_else(|| MapError::NoType(format!("enumerator {name}")))
    }
}
