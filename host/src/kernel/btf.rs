//! The kernel's types: its BTF, read from `__start_BTF` to `__stop_BTF`
//! (kallsyms gives both), parsed by [`vmdump_format::btf`]
//! (docs/kernel-map.md §2).

use std::sync::Arc;

use vmdump_format::btf::{Btf, MAX_BTF, Member};

use super::error::{MapError, read_error};
use super::kallsyms::Kallsyms;
use super::modules::Module;
use crate::xlat::{KernelMemory, PhysRead};

const TABLE: &str = "BTF";

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
        let why = match symbols.has_data_symbols() {
            true => "a kernel built without CONFIG_DEBUG_INFO_BTF",
            false => "its kallsyms lists functions alone: a kernel built without CONFIG_KALLSYMS_ALL",
        };
        let missing = |symbol: &str| MapError::MissingSymbol {
            table: TABLE,
            symbol: format!("{symbol} in kallsyms ({why})"),
        };
        let start = symbols.lookup("__start_BTF").ok_or_else(|| missing("__start_BTF"))?.address;
        let stop = symbols.lookup("__stop_BTF").ok_or_else(|| missing("__stop_BTF"))?.address;
        let len =
            stop.checked_sub(start).filter(|&len| len > 0 && len <= MAX_BTF as u64).ok_or_else(|| {
                MapError::Corrupt {
                    table: TABLE,
                    what: "__start_BTF to __stop_BTF",
                    vaddr: start,
                    detail: format!("a range of {:#x} bytes", stop.wrapping_sub(start)),
                }
            })?;
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
