//! The kernel's own symbol table, kallsyms, read out of the dump at the
//! addresses VMCOREINFO gives since Linux 6.0 (docs/kernel-map.md §1).
//!
//! Names are token-compressed: each is a length, then that many indexes
//! into 256 tokens (`kallsyms_token_index` gives where each token starts in
//! the NUL-separated `kallsyms_token_table`); the first character decoded
//! is the symbol's `nm` type. Since 6.1 a length of 128 or more takes two
//! bytes (7 bits each, low first). Addresses are 32-bit entries of
//! `kallsyms_offsets`, which kernels have read four ways
//! ([`AddressEncoding`]); `_stext`, which VMCOREINFO gives, tells which.

use std::sync::OnceLock;

use vmdump_format::elf::Endian;
use vmdump_format::name_index::NameIndex;
use vmdump_format::vmcoreinfo::VmcoreInfo;

use super::error::{MapError, read_error};
use crate::xlat::{KernelMemory, PhysRead};

const TABLE: &str = "kallsyms";

/// How `kallsyms_offsets` (or `kallsyms_addresses`) gives addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressEncoding {
    /// `kallsyms_addresses[]`, whole addresses (kernels built without
    /// base-relative kallsyms, before 6.11).
    Absolute,
    /// `kallsyms_relative_base` plus the unsigned offset (4.6 to 6.19).
    BaseRelative,
    /// x86_64 SMP kernels before 6.15: an offset of 0 or more is the
    /// address itself (per-CPU symbols, near 0); a negative one counts
    /// down from `kallsyms_relative_base - 1`.
    AbsolutePercpu,
    /// 7.0 and later: the entry's own address plus the signed offset.
    PlaceRelative,
}

/// One symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol<'k> {
    /// Its name.
    pub name: &'k str,
    /// Its address.
    pub address: u64,
    /// Its `nm` type: `T`/`t` text, `D`/`d` data, `R`/`r` read-only,
    /// `B`/`b` bss, `A` absolute, `V`/`W` weak; upper case when global.
    pub kind: char,
    /// Bytes to the next symbol at a higher address (kallsyms records no
    /// sizes); `None` for the last one.
    pub size: Option<u64>,
}

/// The kernel's symbols, in kallsyms' order (by address).
#[derive(Debug)]
pub struct Kallsyms {
    addresses: Vec<u64>,
    names: Names,
    /// Built on the first lookup by name.
    by_name: OnceLock<NameIndex>,
    encoding: AddressEncoding,
}

impl Kallsyms {
    /// Reads the tables VMCOREINFO points at.
    ///
    /// # Errors
    /// A table VMCOREINFO does not give, a failed read, names that run
    /// past what the tables hold, or offsets no known encoding reads
    /// `_stext` from.
    pub fn read<R: PhysRead + ?Sized>(
        memory: &KernelMemory<'_, R>,
        info: &VmcoreInfo,
    ) -> Result<Self, MapError> {
        let tables = Tables::open(memory, info)?;
        let names = Names::read(memory, &tables)?;
        let stext_index = names
            .index_of("_stext")
            .ok_or_else(|| MapError::MissingSymbol { table: TABLE, symbol: "_stext in its names".into() })?;
        let table = AddressTable::find(memory, info, stext_index)?;
        let addresses = table.all_from(memory, 0, names.ends.len())?;
        Ok(Kallsyms { addresses, names, by_name: OnceLock::new(), encoding: table.encoding })
    }

    /// Finds the symbols called `wanted` in one pass over the names,
    /// keeping none of the others: what a dump needs of kallsyms (a few
    /// dozen bytes, where the whole table takes 7 MiB).
    ///
    /// # Errors
    /// As [`Kallsyms::read`].
    pub fn find<R: PhysRead + ?Sized>(
        memory: &KernelMemory<'_, R>,
        info: &VmcoreInfo,
        wanted: &[&'static str],
    ) -> Result<SomeSymbols, MapError> {
        let tables = Tables::open(memory, info)?;
        let mut decoder = Decoder::new(&tables.tokens);
        let (mut name, mut index, mut data) = (Vec::new(), 0, 0);
        let mut stext = None;
        let mut matches = Vec::new();
        each_name(memory, &tables, |where_, tokens_of_name| {
            name.clear();
            let kind = decoder.append(where_, tokens_of_name, &mut name)?;
            data += usize::from(is_data(kind));
            if name == b"_stext" {
                stext.get_or_insert(index);
            }
            if let Some(&n) = wanted.iter().find(|w| w.as_bytes() == name) {
                matches.push((n, index, kind));
            }
            index += 1;
            Ok(())
        })?;
        let stext = stext
            .ok_or_else(|| MapError::MissingSymbol { table: TABLE, symbol: "_stext in its names".into() })?;
        let table = AddressTable::find(memory, info, stext)?;
        let found = matches
            .into_iter()
            .map(|(name, index, kind)| {
                Ok(Found { name, address: table.address(memory, index)?, kind: char::from(kind) })
            })
            .collect::<Result<_, MapError>>()?;
        Ok(SomeSymbols { found, data_symbols: has_data_symbols(data, tables.num_syms) })
    }

    /// How the addresses were encoded.
    pub fn encoding(&self) -> AddressEncoding {
        self.encoding
    }

    /// The number of symbols.
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    /// Whether there are none (never, once read).
    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }

    /// Whether it lists data symbols (`d`, `b`, `r` types) besides text:
    /// not a kernel built without CONFIG_KALLSYMS_ALL (Debian's arm64),
    /// which lists functions and a few section markers alone (1 of 50,336).
    /// Kernels with it have a quarter to a half of data symbols; one in a
    /// hundred tells them apart.
    pub fn has_data_symbols(&self) -> bool {
        has_data_symbols(self.names.kinds.iter().filter(|&&k| is_data(k)).count(), self.len())
    }

    /// Symbol `index`, in kallsyms' order.
    ///
    /// # Panics
    /// `index` is not below [`Kallsyms::len`].
    pub fn get(&self, index: usize) -> Symbol<'_> {
        let address = self.addresses[index];
        let next = self.addresses[index + 1..].iter().find(|&&a| a > address);
        Symbol {
            name: self.names.name(index),
            address,
            kind: char::from(self.names.kinds[index]),
            size: next.map(|n| n - address),
        }
    }

    /// Every symbol, in kallsyms' order.
    pub fn iter(&self) -> impl Iterator<Item = Symbol<'_>> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Every symbol called `name` (static symbols of several files can
    /// share one), in kallsyms' order.
    pub fn named(&self, name: &str) -> impl Iterator<Item = Symbol<'_>> {
        let index = self.by_name.get_or_init(|| NameIndex::new((0..self.len()).map(|i| self.names.name(i))));
        let mut found: Vec<usize> =
            index.candidates(name).map(|i| i as usize).filter(|&i| self.names.name(i) == name).collect();
        found.sort_unstable();
        found.into_iter().map(|i| self.get(i))
    }

    /// The symbol called `name`: the global one when there are several.
    pub fn lookup(&self, name: &str) -> Option<Symbol<'_>> {
        let mut all = self.named(name);
        let first = all.next()?;
        Some(std::iter::once(first).chain(all).find(|s| s.kind.is_ascii_uppercase()).unwrap_or(first))
    }

    /// The address of `name`.
    ///
    /// # Errors
    /// kallsyms has no such symbol.
    pub fn address_of(&self, name: &str) -> Result<u64, MapError> {
        self.lookup(name)
            .map(|s| s.address)
            .ok_or_else(|| MapError::MissingSymbol { table: TABLE, symbol: name.to_owned() })
    }

    /// The symbol `address` falls in, and how far into it: the last one
    /// at or below it, when the address is within its size.
    pub fn containing(&self, address: u64) -> Option<(Symbol<'_>, u64)> {
        let after = self.addresses.partition_point(|&a| a <= address);
        let index = after.checked_sub(1)?;
        // Of symbols sharing the address, the first one (the kernel's order).
        let start = self.addresses[..=index].partition_point(|&a| a < self.addresses[index]);
        let symbol = self.get(start);
        let offset = address - symbol.address;
        symbol.size.is_some_and(|size| offset < size).then_some((symbol, offset))
    }
}

/// Symbols found by [`Kallsyms::find`].
#[derive(Debug, Clone, Default)]
pub struct SomeSymbols {
    found: Vec<Found>,
    data_symbols: bool,
}

#[derive(Debug, Clone)]
struct Found {
    name: &'static str,
    address: u64,
    kind: char,
}

impl SomeSymbols {
    /// The address of the symbol called `name`: the global one when there
    /// are several (as [`Kallsyms::lookup`] chooses); `None` for a name
    /// not asked for or not in kallsyms.
    pub fn lookup(&self, name: &str) -> Option<u64> {
        let mut all = self.found.iter().filter(|f| f.name == name);
        let first = all.next()?;
        Some(std::iter::once(first).chain(all).find(|f| f.kind.is_ascii_uppercase()).unwrap_or(first).address)
    }

    /// The address of `name`.
    ///
    /// # Errors
    /// kallsyms has no such symbol.
    pub fn address_of(&self, name: &str) -> Result<u64, MapError> {
        self.lookup(name).ok_or_else(|| MapError::MissingSymbol { table: TABLE, symbol: name.to_owned() })
    }

    /// As [`Kallsyms::has_data_symbols`].
    pub fn has_data_symbols(&self) -> bool {
        self.data_symbols
    }
}

/// Whether `nm` type `kind` is data: `d`, `b`, `r` in either case.
fn is_data(kind: u8) -> bool {
    matches!(kind.to_ascii_lowercase(), b'd' | b'b' | b'r')
}

/// Whether a table of `len` symbols with `data` data symbols lists data
/// besides text (see [`Kallsyms::has_data_symbols`]).
fn has_data_symbols(data: usize, len: usize) -> bool {
    data * 100 > len
}

/// What the names are read with: their count, where they are, how their
/// lengths are written, and the tokens.
struct Tables {
    num_syms: usize,
    names_at: u64,
    long_lengths: bool,
    tokens: Tokens,
}

impl Tables {
    fn open<R: PhysRead + ?Sized>(memory: &KernelMemory<'_, R>, info: &VmcoreInfo) -> Result<Self, MapError> {
        let endian = memory.arch().endian();
        let num_at = symbol(info, "kallsyms_num_syms")?;
        let num_syms = endian.u32(&read(memory, num_at, 4, "kallsyms_num_syms")?, 0) as usize;
        if num_syms == 0 || num_syms > MAX_SYMBOLS {
            return Err(corrupt("kallsyms_num_syms", num_at, format!("{num_syms} symbols")));
        }
        Ok(Tables {
            num_syms,
            names_at: symbol(info, "kallsyms_names")?,
            long_lengths: info.kernel_version().is_none_or(|v| v >= (6, 1)),
            tokens: Tokens::read(memory, info, endian)?,
        })
    }
}

/// More symbols than any kernel has (about 200,000 in Debian's 7.2).
const MAX_SYMBOLS: usize = 4 << 20;

/// The 256 tokens names are made of.
struct Tokens(Vec<Vec<u8>>);

/// Bytes a token is copied in at once: most are shorter (see
/// [`Tokens::append`]).
const TOKEN_COPY: usize = 16;

impl Tokens {
    fn read<R: PhysRead + ?Sized>(
        memory: &KernelMemory<'_, R>,
        info: &VmcoreInfo,
        endian: Endian,
    ) -> Result<Self, MapError> {
        let index_at = symbol(info, "kallsyms_token_index")?;
        let index = read(memory, index_at, 512, "kallsyms_token_index")?;
        let starts: Vec<usize> = (0..256).map(|i| usize::from(endian.u16(&index, 2 * i))).collect();
        let table_at = symbol(info, "kallsyms_token_table")?;
        // Each token is NUL-terminated; the table ends after the last
        // token's NUL, which a read past the highest start finds.
        let highest = *starts.iter().max().expect("256 starts");
        let table = read(memory, table_at, highest + MAX_TOKEN, "kallsyms_token_table")?;
        let tokens = starts
            .iter()
            .map(|&start| {
                let len = table[start..].iter().position(|&b| b == 0);
                len.map(|len| table[start..start + len].to_vec()).ok_or_else(|| {
                    corrupt("kallsyms_token_table", table_at + start as u64, "a token without its NUL".into())
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Tokens(tokens))
    }

    /// Appends token `t` to `out`: a token of up to [`TOKEN_COPY`] bytes
    /// is copied as that many bytes from its padded copy, then cut to its
    /// length, which is faster than a copy of any length for the millions
    /// of tokens of a kernel's names.
    fn append(&self, padded: &[[u8; TOKEN_COPY]; 256], t: u8, out: &mut Vec<u8>) {
        let token = &self.0[usize::from(t)];
        if token.len() <= TOKEN_COPY {
            let len = out.len();
            out.extend_from_slice(&padded[usize::from(t)]);
            out.truncate(len + token.len());
        } else {
            out.extend_from_slice(token);
        }
    }

    /// Each token padded to [`TOKEN_COPY`] bytes (those longer, cut).
    fn padded(&self) -> [[u8; TOKEN_COPY]; 256] {
        let mut padded = [[0; TOKEN_COPY]; 256];
        for (copy, token) in padded.iter_mut().zip(&self.0) {
            let len = token.len().min(TOKEN_COPY);
            copy[..len].copy_from_slice(&token[..len]);
        }
        padded
    }
}

/// Longer than any token (the kernel's scripts/kallsyms makes them from
/// pairs of symbol characters and tokens, a few dozen bytes at most).
const MAX_TOKEN: usize = 256;

/// The decoded names, all in one string.
#[derive(Debug, Default)]
struct Names {
    text: String,
    ends: Vec<u32>,
    kinds: Vec<u8>,
}

/// Names as they are decoded, checked as UTF-8 once at the end.
#[derive(Default)]
struct Decoded {
    text: Vec<u8>,
    ends: Vec<u32>,
    kinds: Vec<u8>,
}

/// Bytes of `kallsyms_names` held at a time (a name's tokens that cross
/// its end are carried into the next): a dump's one pass over the names
/// costs the capture kernel no more.
const NAMES_WINDOW: usize = 16 << 10;

impl Names {
    /// Reads the names in two passes over `kallsyms_names`: the first
    /// sizes the decoded text, the second decodes it into buffers of that
    /// size, so that no buffer grows by doubling (the peak stays the size
    /// of the names, 5 MiB for 200,000 symbols, not twice that).
    fn read<R: PhysRead + ?Sized>(memory: &KernelMemory<'_, R>, tables: &Tables) -> Result<Self, MapError> {
        let (tokens, num_syms) = (&tables.tokens, tables.num_syms);
        let mut size = 0usize;
        each_name(memory, tables, |_, tokens_of_name| {
            size += tokens_of_name.iter().map(|&t| tokens.0[usize::from(t)].len()).sum::<usize>();
            Ok(())
        })?;
        let mut names = Decoded {
            text: Vec::with_capacity(size + TOKEN_COPY),
            ends: Vec::with_capacity(num_syms),
            kinds: Vec::with_capacity(num_syms),
        };
        let mut decoder = Decoder::new(tokens);
        each_name(memory, tables, |where_, tokens_of_name| {
            let kind = decoder.append(where_, tokens_of_name, &mut names.text)?;
            names.kinds.push(kind);
            let end = u32::try_from(names.text.len())
                .map_err(|_| corrupt("kallsyms_names", where_, "over 4 GiB of names".into()))?;
            names.ends.push(end);
            Ok(())
        })?;
        // Kernel symbols are ASCII: every end is a character boundary.
        if !names.text.is_ascii() {
            return Err(corrupt("kallsyms_names", tables.names_at, "names that are not ASCII".into()));
        }
        let text = String::from_utf8(names.text).expect("ASCII");
        Ok(Names { text, ends: names.ends, kinds: names.kinds })
    }

    fn name(&self, index: usize) -> &str {
        let start = if index == 0 { 0 } else { self.ends[index - 1] as usize };
        &self.text[start..self.ends[index] as usize]
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        (0..self.ends.len()).find(|&i| self.name(i) == name)
    }
}

/// Decodes names from their tokens.
struct Decoder<'t> {
    tokens: &'t Tokens,
    padded: [[u8; TOKEN_COPY]; 256],
    first: Vec<u8>,
}

impl<'t> Decoder<'t> {
    fn new(tokens: &'t Tokens) -> Self {
        Decoder { tokens, padded: tokens.padded(), first: Vec::new() }
    }

    /// Appends the name `tokens_of_name` (of the name at `where_`) spells
    /// to `out`, and returns its type: the first character decoded.
    fn append(&mut self, where_: u64, tokens_of_name: &[u8], out: &mut Vec<u8>) -> Result<u8, MapError> {
        let (&head, rest) = tokens_of_name.split_first().expect("each_name gives one token at least");
        self.first.clear();
        self.tokens.append(&self.padded, head, &mut self.first);
        let Some((&kind, name_start)) = self.first.split_first() else {
            return Err(corrupt("kallsyms_names", where_, "a name that starts with an empty token".into()));
        };
        out.extend_from_slice(name_start);
        for &token in rest {
            self.tokens.append(&self.padded, token, out);
        }
        Ok(kind)
    }
}

/// Calls `each(where, tokens)` with the token bytes of each of the
/// names of `kallsyms_names` (a length byte, two when the first has bit 7
/// and the kernel is 6.1 or later, then the tokens).
fn each_name<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    tables: &Tables,
    mut each: impl FnMut(u64, &[u8]) -> Result<(), MapError>,
) -> Result<(), MapError> {
    let mut window = Window { memory, next: tables.names_at, bytes: Vec::new(), at: 0 };
    for _ in 0..tables.num_syms {
        let where_ = window.position();
        let mut len = usize::from(window.take(1)?[0]);
        if tables.long_lengths && len & 0x80 != 0 {
            len = (len & 0x7f) | usize::from(window.take(1)?[0]) << 7;
        }
        let tokens = window.take(len)?;
        if tokens.is_empty() {
            return Err(corrupt("kallsyms_names", where_, "a name of no tokens".into()));
        }
        each(where_, tokens)?;
    }
    Ok(())
}

/// `kallsyms_names`, read a window at a time.
struct Window<'m, 'a, R: PhysRead + ?Sized> {
    memory: &'m KernelMemory<'a, R>,
    /// The address of the byte after `bytes`.
    next: u64,
    bytes: Vec<u8>,
    at: usize,
}

impl<R: PhysRead + ?Sized> Window<'_, '_, R> {
    fn position(&self) -> u64 {
        self.next - (self.bytes.len() - self.at) as u64
    }

    fn take(&mut self, len: usize) -> Result<&[u8], MapError> {
        if self.bytes.len() - self.at < len {
            self.bytes.drain(..self.at);
            self.at = 0;
            let old = self.bytes.len();
            let more = NAMES_WINDOW.max(old + len) - old;
            self.bytes.resize(old + more, 0);
            self.memory.read_virt(self.next, &mut self.bytes[old..]).map_err(read_error(
                TABLE,
                "kallsyms_names",
                self.next,
            ))?;
            self.next += more as u64;
        }
        self.at += len;
        Ok(&self.bytes[self.at - len..self.at])
    }
}

/// Where `kallsyms_addresses` or `kallsyms_offsets` is, and how its
/// entries give addresses: the encoding that gives `_stext` where
/// VMCOREINFO says it is.
struct AddressTable {
    at: u64,
    encoding: AddressEncoding,
    /// `kallsyms_relative_base`, for the encodings that use it.
    base: u64,
}

impl AddressTable {
    fn find<R: PhysRead + ?Sized>(
        memory: &KernelMemory<'_, R>,
        info: &VmcoreInfo,
        stext_index: usize,
    ) -> Result<Self, MapError> {
        let endian = memory.arch().endian();
        let stext = symbol(info, "_stext")?;
        if let Some(at) = info.symbol("kallsyms_addresses") {
            let table = AddressTable { at, encoding: AddressEncoding::Absolute, base: 0 };
            return match table.address(memory, stext_index)? == stext {
                true => Ok(table),
                false => Err(unknown_encoding(at, stext)),
            };
        }
        let at = symbol(info, "kallsyms_offsets")?;
        let base = match info.symbol("kallsyms_relative_base") {
            Some(base_at) => Some(endian.u64(&read(memory, base_at, 8, "kallsyms_relative_base")?, 0)),
            None => None,
        };
        let candidates = match base {
            Some(_) => [AddressEncoding::BaseRelative, AddressEncoding::AbsolutePercpu].as_slice(),
            None => [AddressEncoding::PlaceRelative].as_slice(),
        };
        let entry = endian.u32(&read(memory, at + 4 * stext_index as u64, 4, "kallsyms_offsets")?, 0);
        candidates
            .iter()
            .map(|&encoding| AddressTable { at, encoding, base: base.unwrap_or(0) })
            .find(|table| table.decode(stext_index, entry) == stext)
            .ok_or_else(|| unknown_encoding(at, stext))
    }

    /// The address of symbol `index`, read alone.
    fn address<R: PhysRead + ?Sized>(
        &self,
        memory: &KernelMemory<'_, R>,
        index: usize,
    ) -> Result<u64, MapError> {
        Ok(self.all_from(memory, index, 1)?[0])
    }

    /// The addresses of the `count` symbols from `first` on.
    fn all_from<R: PhysRead + ?Sized>(
        &self,
        memory: &KernelMemory<'_, R>,
        first: usize,
        count: usize,
    ) -> Result<Vec<u64>, MapError> {
        let endian = memory.arch().endian();
        if self.encoding == AddressEncoding::Absolute {
            let raw = read(memory, self.at + 8 * first as u64, 8 * count, "kallsyms_addresses")?;
            return Ok((0..count).map(|i| endian.u64(&raw, 8 * i)).collect());
        }
        let raw = read(memory, self.at + 4 * first as u64, 4 * count, "kallsyms_offsets")?;
        Ok((0..count).map(|i| self.decode(first + i, endian.u32(&raw, 4 * i))).collect())
    }

    /// The address entry `raw` of symbol `index` gives.
    fn decode(&self, index: usize, raw: u32) -> u64 {
        match self.encoding {
            AddressEncoding::Absolute => unreachable!("absolute addresses are 64-bit entries"),
            AddressEncoding::BaseRelative => self.base.wrapping_add(u64::from(raw)),
            AddressEncoding::AbsolutePercpu if (raw as i32) >= 0 => u64::from(raw),
            AddressEncoding::AbsolutePercpu => {
                self.base.wrapping_sub(1).wrapping_sub(i64::from(raw as i32) as u64)
            }
            AddressEncoding::PlaceRelative => {
                (self.at + 4 * index as u64).wrapping_add_signed(i64::from(raw as i32))
            }
        }
    }
}

fn unknown_encoding(vaddr: u64, stext: u64) -> MapError {
    corrupt(
        "kallsyms_offsets",
        vaddr,
        format!("no known encoding gives _stext at {stext:#x}, where VMCOREINFO puts it"),
    )
}

fn symbol(info: &VmcoreInfo, name: &str) -> Result<u64, MapError> {
    info.symbol(name)
        .ok_or_else(|| MapError::MissingSymbol { table: TABLE, symbol: format!("SYMBOL({name})") })
}

fn read<R: PhysRead + ?Sized>(
    memory: &KernelMemory<'_, R>,
    vaddr: u64,
    len: usize,
    what: &'static str,
) -> Result<Vec<u8>, MapError> {
    let mut bytes = vec![0; len];
    memory.read_virt(vaddr, &mut bytes).map_err(read_error(TABLE, what, vaddr))?;
    Ok(bytes)
}

fn corrupt(what: &'static str, vaddr: u64, detail: String) -> MapError {
    MapError::Corrupt { table: TABLE, what, vaddr, detail }
}
