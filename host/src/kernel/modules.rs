//! The kernel's loaded modules, walked from the list `modules` with the
//! layout of `struct module` that BTF gives: each module's name, its
//! symbols (`module.kallsyms`: an ELF symbol table, its strings and the
//! `nm` type of each symbol) and its BTF (split on the kernel's: the
//! kernel's copy in `btf_modules`, or `module.btf_data` while the module
//! is still being loaded) (docs/kernel-map.md §3).

use std::collections::HashSet;

use vmdump_format::btf::Btf;

use super::btf::KernelTypes;
use super::error::{MapError, read_error};
use super::kallsyms::{Kallsyms, Symbol};
use super::object::Object;
use crate::xlat::{KernelMemory, PhysRead};

const TABLE: &str = "modules";

/// More modules than a kernel loads (Debian's desktop: about 150).
const MAX_MODULES: usize = 8192;
/// More symbols than a module has (Debian's largest, amdgpu: about 30,000).
const MAX_MODULE_SYMBOLS: u64 = 1 << 20;
/// An ELF64 symbol: name, info, other, section, value, size.
const ELF64_SYM_SIZE: usize = 24;

/// One loaded module.
#[derive(Debug)]
pub struct Module {
    /// Its name.
    pub name: String,
    address: u64,
    symbols: Vec<OwnedSymbol>,
    btf: Option<(u64, u64)>,
}

#[derive(Debug)]
struct OwnedSymbol {
    name: String,
    address: u64,
    kind: char,
    size: u64,
}

impl Module {
    /// Its symbols, as /proc/kallsyms lists them (those with a name), in
    /// its symbol table's order.
    pub fn symbols(&self) -> impl Iterator<Item = Symbol<'_>> {
        self.symbols.iter().map(|s| Symbol {
            name: &s.name,
            address: s.address,
            kind: s.kind,
            size: Some(s.size),
        })
    }

    /// Where its BTF is and how long (`None` for a module without BTF).
    pub fn btf_range(&self) -> Option<(u64, u64)> {
        self.btf
    }

    /// Where its `struct module` is.
    pub fn address(&self) -> u64 {
        self.address
    }
}

/// The loaded modules, most recently loaded first (the list's order).
#[derive(Debug, Default)]
pub struct Modules {
    list: Vec<Module>,
}

impl Modules {
    /// Walks the list `modules`.
    ///
    /// # Errors
    /// kallsyms has no `modules`, BTF lacks a member of `struct module`,
    /// a read fails, or the list does not end.
    pub fn read<R: PhysRead + ?Sized>(
        memory: &KernelMemory<'_, R>,
        symbols: &Kallsyms,
        types: &KernelTypes,
    ) -> Result<Self, MapError> {
        let btf = types.vmlinux();
        let head = symbols.address_of("modules")?;
        let list_offset = types.member("module", "list")?.offset();
        let unformed = btf.enumerator("MODULE_STATE_UNFORMED").map(|(v, _)| v as u64);
        let mut list = Vec::new();
        let mut next = memory.read_u64(head).map_err(read_error(TABLE, "the list head", head))?;
        while next != head {
            if list.len() == MAX_MODULES {
                return Err(MapError::Corrupt {
                    table: TABLE,
                    what: "the list",
                    vaddr: head,
                    detail: format!("more than {MAX_MODULES} modules: a loop?"),
                });
            }
            let module = Object::read(memory, btf, "module", next - list_offset)?;
            next = module.unsigned("list.next")?;
            if unformed.is_some() && module.unsigned("state").ok() == unformed {
                continue; // still being loaded: /proc/kallsyms leaves it out too
            }
            list.push(read_module(memory, btf, &module)?);
        }
        let mut modules = Modules { list };
        if let Ok(head) = symbols.address_of("btf_modules") {
            modules.find_btf(memory, types, head)?;
        }
        Ok(modules)
    }

    /// Where each module's BTF is once it is loaded: the kernel keeps a
    /// copy (`struct btf.data`) in the list `btf_modules` of `struct
    /// btf_module`, and clears `module.btf_data`, whose section it frees.
    fn find_btf<R: PhysRead + ?Sized>(
        &mut self,
        memory: &KernelMemory<'_, R>,
        types: &KernelTypes,
        head: u64,
    ) -> Result<(), MapError> {
        let btf = types.vmlinux();
        let mut next = memory.read_u64(head).map_err(read_error(TABLE, "the list btf_modules", head))?;
        for _ in 0..MAX_MODULES {
            if next == head {
                return Ok(());
            }
            let entry =
                Object::read(memory, btf, "btf_module", next - types.member("btf_module", "list")?.offset())?;
            next = entry.unsigned("list.next")?;
            let owner = entry.unsigned("module")?;
            let data = Object::read(memory, btf, "btf", entry.unsigned("btf")?)?;
            let range = (data.unsigned("data")?, data.unsigned("data_size")?);
            if let Some(module) = self.list.iter_mut().find(|m| m.address == owner) {
                module.btf = Some(range);
            }
        }
        Err(MapError::Corrupt {
            table: TABLE,
            what: "the list btf_modules",
            vaddr: head,
            detail: format!("more than {MAX_MODULES} entries: a loop?"),
        })
    }

    /// Every module.
    pub fn iter(&self) -> impl Iterator<Item = &Module> {
        self.list.iter()
    }

    /// The module called `name`.
    pub fn get(&self, name: &str) -> Option<&Module> {
        self.list.iter().find(|m| m.name == name)
    }

    /// The symbol `address` is in, among every module's, and its module.
    pub fn containing(&self, address: u64) -> Option<(&Module, Symbol<'_>, u64)> {
        self.list.iter().find_map(|m| {
            m.symbols()
                .find(|s| s.size.is_some_and(|size| (s.address..s.address + size.max(1)).contains(&address)))
                .map(|s| (m, s, address - s.address))
        })
    }
}

fn read_module<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    btf: &Btf,
    module: &Object<'_>,
) -> Result<Module, MapError> {
    let name = module.c_string("name")?;
    let kallsyms = module.unsigned("kallsyms")?;
    let mut symbols = if kallsyms == 0 { Vec::new() } else { module_symbols(memory, btf, kallsyms, &name)? };
    // The type as /proc/kallsyms shows it: upper case when the module
    // exports the symbol, lower case when not.
    let exported = exports(memory, btf, module)?;
    for s in &mut symbols {
        let is_exported = exported.contains(&(s.address, s.name.clone()));
        s.kind = if is_exported { s.kind.to_ascii_uppercase() } else { s.kind.to_ascii_lowercase() };
    }
    let btf_range = match (module.unsigned("btf_data"), module.unsigned("btf_data_size")) {
        (Ok(start), Ok(len)) if start != 0 && len != 0 => Some((start, len)),
        _ => None,
    };
    Ok(Module { name, address: module.address(), symbols, btf: btf_range })
}

/// The symbols of `struct mod_kallsyms` at `at`.
fn module_symbols<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    btf: &Btf,
    at: u64,
    module: &str,
) -> Result<Vec<OwnedSymbol>, MapError> {
    let table = Object::read(memory, btf, "mod_kallsyms", at)?;
    let count = table.unsigned("num_symtab")?;
    if count > MAX_MODULE_SYMBOLS {
        return Err(MapError::Corrupt {
            table: TABLE,
            what: "mod_kallsyms.num_symtab",
            vaddr: at,
            detail: format!("{count} symbols in {module}"),
        });
    }
    let count = count as usize;
    let read = |what: &'static str, vaddr: u64, len: usize| {
        let mut bytes = vec![0; len];
        memory.read_virt(vaddr, &mut bytes).map_err(read_error(TABLE, what, vaddr)).map(|()| bytes)
    };
    let symtab = read("a module's symbol table", table.unsigned("symtab")?, count * ELF64_SYM_SIZE)?;
    let types = read("a module's symbol types", table.unsigned("typetab")?, count)?;
    let strtab_at = table.unsigned("strtab")?;
    let e = memory.arch().endian();
    let entries: Vec<(u32, u64, u64)> = (0..count)
        .map(|i| {
            let sym = &symtab[i * ELF64_SYM_SIZE..];
            (e.u32(sym, 0), e.u64(sym, 8), e.u64(sym, 16))
        })
        .collect();
    // The strings run from strtab to past the last name's NUL.
    let strings_len = entries.iter().map(|&(name, ..)| name as usize).max().unwrap_or(0) + MAX_SYMBOL_NAME;
    let strings = read_up_to(memory, strtab_at, strings_len)?;
    let mut symbols = Vec::with_capacity(count);
    for (i, &(name_at, address, size)) in entries.iter().enumerate() {
        let name =
            strings.get(name_at as usize..).and_then(|s| s.split(|&b| b == 0).next()).unwrap_or_default();
        if name.is_empty() {
            continue; // the null symbol, and any other /proc/kallsyms leaves out
        }
        let name = String::from_utf8_lossy(name).into_owned();
        symbols.push(OwnedSymbol { name, address, kind: char::from(types[i]), size });
    }
    Ok(symbols)
}

/// The symbols of `module.syms`, as (address, name): those that
/// /proc/kallsyms calls exported (which leaves out `module.gpl_syms`, the
/// GPL-only exports that 6.1 keeps apart; 7.2 has no such table).
fn exports<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    btf: &Btf,
    module: &Object<'_>,
) -> Result<HashSet<(u64, String)>, MapError> {
    let mut exported = HashSet::new();
    let (at, count) = (module.unsigned("syms")?, module.unsigned("num_syms")?);
    if at == 0 || count == 0 {
        return Ok(exported);
    }
    if count > MAX_MODULE_SYMBOLS {
        let detail = format!("{count} exports");
        return Err(MapError::Corrupt {
            table: TABLE,
            what: "module.num_syms",
            vaddr: module.address(),
            detail,
        });
    }
    let size = btf.aggregate("kernel_symbol").and_then(|t| btf.size_of(t.id)).unwrap_or(12);
    for i in 0..count {
        let entry = Object::read(memory, btf, "kernel_symbol", at + i * size)?;
        exported.insert(export(memory, &entry)?);
    }
    Ok(exported)
}

/// One `struct kernel_symbol`: with place-relative references (x86_64,
/// arm64 and most 64-bit machines), offsets from each field's own
/// address; otherwise an address and a name pointer.
fn export<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    entry: &Object<'_>,
) -> Result<(u64, String), MapError> {
    let (value, name_at) = match entry.member("value_offset") {
        Ok(_) => {
            let relative = |field: &str| -> Result<u64, MapError> {
                let offset = entry.unsigned(field)? as u32 as i32;
                Ok(entry.address_of(field)?.wrapping_add_signed(i64::from(offset)))
            };
            (relative("value_offset")?, relative("name_offset")?)
        }
        Err(_) => (entry.unsigned("value")?, entry.unsigned("name")?),
    };
    let bytes = read_up_to(memory, name_at, MAX_SYMBOL_NAME)?;
    let name = bytes.split(|&b| b == 0).next().unwrap_or_default();
    Ok((value, String::from_utf8_lossy(name).into_owned()))
}

/// Longer than any symbol name (KSYM_NAME_LEN is 512).
const MAX_SYMBOL_NAME: usize = 512;

/// Up to `len` bytes at `vaddr`: fewer when the mapping ends first.
fn read_up_to<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    vaddr: u64,
    len: usize,
) -> Result<Vec<u8>, MapError> {
    let mut bytes = vec![0; len];
    let page = memory.page_size() as usize;
    let mut done = 0;
    while done < len {
        let chunk = (len - done).min(page - (vaddr as usize + done) % page);
        match memory.read_virt(vaddr + done as u64, &mut bytes[done..done + chunk]) {
            Ok(()) => done += chunk,
            Err(_) if done > 0 => break,
            Err(e) => return Err(read_error(TABLE, "a module's strings", vaddr)(e)),
        }
    }
    bytes.truncate(done);
    Ok(bytes)
}
