//! BTF, the compact type information the kernel carries in its own memory
//! (`__start_BTF` to `__stop_BTF`, what `/sys/kernel/btf/vmlinux` shows),
//! and modules in theirs (docs/kernel-map.md §2).
//!
//! A BTF blob is a header (magic `0xeb9f` in the writer's byte order,
//! version 1, its own length, then the offset and length of the type and
//! string sections after it), a run of type records and a table of
//! NUL-terminated names. Each record is 12 bytes (name offset; `info`:
//! member count in bits 0-15, kind in bits 24-28, a flag in bit 31; a size
//! or a type id) and what its kind adds. Type ids count from 1, in record
//! order; 0 is `void`. A module's BTF is split: its ids and name offsets
//! continue those of the kernel's BTF it was built against.

use std::sync::{Arc, OnceLock};

mod scan;
pub use scan::find_enumerators;

use crate::FormatError;
use crate::elf::Endian;
use crate::name_index::NameIndex;

/// The kinds of type record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// An integer (`size` bytes).
    Int,
    /// A pointer to `type`.
    Ptr,
    /// An array.
    Array,
    /// A struct (`size` bytes, members).
    Struct,
    /// A union.
    Union,
    /// An enum of 32-bit values.
    Enum,
    /// A forward declaration.
    Fwd,
    /// A typedef of `type`.
    Typedef,
    /// `volatile type`.
    Volatile,
    /// `const type`.
    Const,
    /// `restrict type`.
    Restrict,
    /// A function (its prototype is `type`).
    Func,
    /// A function prototype.
    FuncProto,
    /// A variable (per-CPU ones in the kernel's BTF).
    Var,
    /// A section of variables.
    Datasec,
    /// A floating-point type.
    Float,
    /// A declaration tag.
    DeclTag,
    /// A type tag.
    TypeTag,
    /// An enum of 64-bit values.
    Enum64,
}

impl Kind {
    fn from_number(kind: u32) -> Option<Kind> {
        use Kind::*;
        const KINDS: [Kind; 19] = [
            Int, Ptr, Array, Struct, Union, Enum, Fwd, Typedef, Volatile, Const, Restrict, Func, FuncProto,
            Var, Datasec, Float, DeclTag, TypeTag, Enum64,
        ];
        KINDS.get(usize::try_from(kind).ok()?.checked_sub(1)?).copied()
    }

    /// Bytes a record of this kind has after its 12, for `vlen` entries.
    fn extra(self, vlen: usize) -> usize {
        match self {
            Kind::Int | Kind::Var | Kind::DeclTag => 4,
            Kind::Array => 12,
            Kind::Struct | Kind::Union | Kind::Datasec | Kind::Enum64 => 12 * vlen,
            Kind::Enum | Kind::FuncProto => 8 * vlen,
            _ => 0,
        }
    }

    /// The C keyword or word for it, as `vmdump symbols` prints types.
    pub fn keyword(self) -> &'static str {
        match self {
            Kind::Struct => "struct",
            Kind::Union => "union",
            Kind::Enum | Kind::Enum64 => "enum",
            Kind::Typedef => "typedef",
            Kind::Func => "function",
            Kind::Var => "variable",
            _ => "",
        }
    }
}

/// One type record.
#[derive(Debug, Clone, Copy)]
pub struct Type<'b> {
    /// Its id.
    pub id: u32,
    /// Its kind.
    pub kind: Kind,
    /// Its name ("" for anonymous types).
    pub name: &'b str,
    vlen: usize,
    kind_flag: bool,
    /// Size (integers, structs, unions, enums) or referred type.
    size_or_type: u32,
    /// The bytes the kind adds.
    extra: &'b [u8],
}

/// A member of a struct or union, as [`Btf::member`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Bits from the start of the outermost struct.
    pub bit_offset: u64,
    /// Width of a bitfield; 0 for a whole member.
    pub bitfield_size: u32,
    /// The member's type.
    pub type_id: u32,
}

impl Member {
    /// Bytes from the start of the outermost struct (of a bitfield, the
    /// byte its first bit is in).
    pub fn offset(&self) -> u64 {
        self.bit_offset / 8
    }
}

/// A parsed BTF blob (the kernel's, or a module's split on it).
#[derive(Debug)]
pub struct Btf {
    bytes: Vec<u8>,
    endian: Endian,
    /// Where each record starts in `bytes`; record `i` has id `first_id + i`.
    records: Vec<u32>,
    first_id: u32,
    /// The string section, as a range of `bytes`.
    strings: (usize, usize),
    /// Name offsets below it are in the base's strings.
    first_string: u32,
    /// Record indexes by name, built on the first lookup by name.
    by_name: OnceLock<NameIndex>,
    /// The kernel's BTF, which a module's refers to.
    base: Option<Arc<Btf>>,
}

/// Bigger than any kernel's BTF (Debian's 7.2: about 6 MiB).
pub const MAX_BTF: usize = 256 << 20;

/// The byte order of the blob whose header starts `header` (24 bytes at
/// least), once its magic and version are checked.
fn header_endian(header: &[u8]) -> Result<Endian, FormatError> {
    let bad = |offset: u64, reason: String| FormatError::BadBtf { offset, reason };
    let endian = match [header[0], header[1]] {
        [0x9f, 0xeb] => Endian::Little,
        [0xeb, 0x9f] => Endian::Big,
        found => return Err(bad(0, format!("magic {found:02x?}, expected 0xeb9f"))),
    };
    match header[2] {
        1 => Ok(endian),
        version => Err(bad(2, format!("version {version}, expected 1"))),
    }
}

/// The pointer size of every machine vmdump reads.
const POINTER_SIZE: u64 = 8;

impl Btf {
    /// Parses the kernel's BTF.
    ///
    /// # Errors
    /// A bad header, a section beyond the blob, a record of unknown kind or
    /// running past its section, a name offset outside the strings.
    pub fn parse(bytes: Vec<u8>) -> Result<Btf, FormatError> {
        Self::parse_on(bytes, None)
    }

    /// Parses a module's BTF, split on `base` (the kernel's).
    ///
    /// # Errors
    /// As [`Btf::parse`].
    pub fn parse_split(bytes: Vec<u8>, base: Arc<Btf>) -> Result<Btf, FormatError> {
        Self::parse_on(bytes, Some(base))
    }

    fn parse_on(bytes: Vec<u8>, base: Option<Arc<Btf>>) -> Result<Btf, FormatError> {
        let (first_id, first_string) = match &base {
            Some(b) => {
                (b.first_id + b.records.len() as u32, b.first_string + (b.strings.1 - b.strings.0) as u32)
            }
            None => (1, 0),
        };
        let bad = |offset: usize, reason: String| FormatError::BadBtf { offset: offset as u64, reason };
        if bytes.len() < 24 || bytes.len() > MAX_BTF {
            return Err(bad(0, format!("{} bytes: not a BTF blob", bytes.len())));
        }
        let endian = header_endian(&bytes)?;
        let field = |at: usize| endian.u32(&bytes, at) as usize;
        let header = field(4);
        let section = |off_at: usize, what: &str| {
            let (start, len) = (header.checked_add(field(off_at)), field(off_at + 4));
            match start.and_then(|s| Some((s, s.checked_add(len)?))) {
                Some((s, e)) if header >= 24 && e <= bytes.len() => Ok((s, e)),
                _ => {
                    Err(bad(off_at, format!("the {what} section runs past the blob's {} bytes", bytes.len())))
                }
            }
        };
        let types = section(8, "type")?;
        let strings = section(16, "string")?;
        let mut btf = Btf {
            endian,
            records: Vec::new(),
            first_id,
            strings,
            first_string,
            by_name: OnceLock::new(),
            base,
            bytes,
        };
        btf.index_records(types)?;
        Ok(btf)
    }

    /// Finds every record's start, and checks its kind and name.
    fn index_records(&mut self, (start, end): (usize, usize)) -> Result<(), FormatError> {
        let mut at = start;
        while at < end {
            let bad = |reason: String| FormatError::BadBtf { offset: at as u64, reason };
            if end - at < 12 {
                return Err(bad("a type record cut short by the end of its section".into()));
            }
            let info = self.endian.u32(&self.bytes, at + 4);
            let kind_number = (info >> 24) & 0x1f;
            let kind =
                Kind::from_number(kind_number).ok_or_else(|| bad(format!("type kind {kind_number}")))?;
            let len = 12 + kind.extra((info & 0xffff) as usize);
            if end - at < len {
                return Err(bad(format!("a {kind:?} record of {len} bytes runs past its section")));
            }
            self.raw_string(self.endian.u32(&self.bytes, at))
                .ok_or_else(|| bad("a name outside the strings".into()))?;
            self.records.push(at as u32);
            at += len;
        }
        Ok(())
    }

    /// The blob as it was read.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The number of type records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The record of `id` (of the base, for a module's ids below its own).
    pub fn get(&self, id: u32) -> Option<Type<'_>> {
        if id < self.first_id {
            return self.base.as_ref()?.get(id);
        }
        let at = *self.records.get(usize::try_from(id - self.first_id).ok()?)? as usize;
        let e = self.endian;
        let info = e.u32(&self.bytes, at + 4);
        let kind = Kind::from_number((info >> 24) & 0x1f)?;
        let vlen = (info & 0xffff) as usize;
        Some(Type {
            id,
            kind,
            name: self.string(e.u32(&self.bytes, at))?,
            vlen,
            kind_flag: info >> 31 == 1,
            size_or_type: e.u32(&self.bytes, at + 8),
            extra: &self.bytes[at + 12..at + 12 + kind.extra(vlen)],
        })
    }

    /// The named types called `name`, of any kind, in id order (this
    /// blob's own: a module's does not search the kernel's).
    pub fn named(&self, name: &str) -> impl Iterator<Item = Type<'_>> {
        let index = self.by_name.get_or_init(|| {
            NameIndex::new((0..self.records.len() as u32).map(|i| self.name_of(self.first_id + i)))
        });
        let mut ids: Vec<u32> = index
            .candidates(name)
            .map(|i| self.first_id + i)
            .filter(|&id| !name.is_empty() && self.name_of(id) == name)
            .collect();
        ids.sort_unstable();
        ids.into_iter().filter_map(|id| self.get(id))
    }

    /// The type `name` of `kind` (the first, if several).
    pub fn find(&self, kind: Kind, name: &str) -> Option<Type<'_>> {
        self.named(name).find(|t| t.kind == kind)
    }

    /// The struct or union `name`; a typedef of one also answers.
    pub fn aggregate(&self, name: &str) -> Option<Type<'_>> {
        let mut named = self.named(name);
        named.find(|t| matches!(t.kind, Kind::Struct | Kind::Union)).or_else(|| {
            let alias = self.find(Kind::Typedef, name)?;
            Some(self.resolve(alias.size_or_type)?).filter(|t| matches!(t.kind, Kind::Struct | Kind::Union))
        })
    }

    /// `id` with typedefs, qualifiers and type tags stripped.
    pub fn resolve(&self, mut id: u32) -> Option<Type<'_>> {
        for _ in 0..MAX_CHAIN {
            let t = self.get(id)?;
            match t.kind {
                Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag => {
                    id = t.size_or_type
                }
                _ => return Some(t),
            }
        }
        None
    }

    /// The size in bytes of a value of type `id`; `None` for types of no
    /// size (functions, void) or a chain that does not end.
    pub fn size_of(&self, id: u32) -> Option<u64> {
        // Arrays of arrays multiply; a chain that does not end (a bad
        // blob's array of itself) has no size.
        let (mut id, mut count) = (id, 1u64);
        for _ in 0..MAX_CHAIN {
            let t = self.resolve(id)?;
            let size = match t.kind {
                Kind::Int
                | Kind::Struct
                | Kind::Union
                | Kind::Enum
                | Kind::Enum64
                | Kind::Float
                | Kind::Datasec => u64::from(t.size_or_type),
                Kind::Ptr => POINTER_SIZE,
                Kind::Array => {
                    let (element, elements) = self.array(t)?;
                    count = count.checked_mul(u64::from(elements))?;
                    id = element;
                    continue;
                }
                _ => return None,
            };
            return size.checked_mul(count);
        }
        None
    }

    /// The members of a struct or union: name, bit offset, bitfield size,
    /// type id.
    pub fn members<'b>(&'b self, t: Type<'b>) -> impl Iterator<Item = (&'b str, Member)> + 'b {
        let count = if matches!(t.kind, Kind::Struct | Kind::Union) { t.vlen } else { 0 };
        (0..count).filter_map(move |i| {
            let at = 12 * i;
            let e = self.endian;
            let name = self.string(e.u32(t.extra, at))?;
            let type_id = e.u32(t.extra, at + 4);
            let offset = e.u32(t.extra, at + 8);
            let (bit_offset, bitfield_size) = match t.kind_flag {
                true => (offset & 0xff_ffff, offset >> 24),
                false => (offset, 0),
            };
            Some((name, Member { bit_offset: u64::from(bit_offset), bitfield_size, type_id }))
        })
    }

    /// The member at `path` (`a.b.c`) of the struct or union `t`, through
    /// anonymous structs and unions as C reaches them.
    pub fn member(&self, t: Type<'_>, path: &str) -> Option<Member> {
        let mut found = Member { bit_offset: 0, bitfield_size: 0, type_id: t.id };
        for name in path.split('.') {
            let outer = self.resolve(found.type_id)?;
            let inner = self.direct_member(outer, name, 0, &mut { MAX_MEMBERS_VISITED })?;
            found = Member { bit_offset: found.bit_offset + inner.bit_offset, ..inner };
        }
        Some(found)
    }

    /// `name` among `t`'s members or those of its anonymous members, in
    /// at most `budget` members visited (a bad blob's anonymous members
    /// can nest without end, or branch at every level).
    fn direct_member(&self, t: Type<'_>, name: &str, depth: usize, budget: &mut usize) -> Option<Member> {
        if depth > MAX_CHAIN {
            return None;
        }
        // Its own members first (C makes names unique across the
        // anonymous ones too, so the order is only for bad blobs).
        *budget = budget.checked_sub(t.vlen)?;
        if let Some((_, m)) = self.members(t).find(|&(member_name, _)| member_name == name) {
            return Some(m);
        }
        for (_, m) in self.members(t).filter(|&(member_name, _)| member_name.is_empty()) {
            let Some(inner) = self.resolve(m.type_id) else { continue };
            if let Some(deeper) = self.direct_member(inner, name, depth + 1, budget) {
                return Some(Member { bit_offset: m.bit_offset + deeper.bit_offset, ..deeper });
            }
        }
        None
    }

    /// The value of the enumerator `name`, and the id of its enum.
    pub fn enumerator(&self, name: &str) -> Option<(i64, u32)> {
        let e = self.endian;
        let is = |offset: u32| self.raw_string(offset) == Some(name.as_bytes());
        self.records.iter().zip(self.first_id..).find_map(|(&at, id)| {
            // The kind from the record's info word: no other record is decoded.
            let kind = (e.u32(&self.bytes, at as usize + 4) >> 24) & 0x1f;
            if kind != 6 && kind != 19 {
                return None;
            }
            let t = self.get(id)?;
            let value = match t.kind {
                Kind::Enum => (0..t.vlen)
                    .find(|&i| is(e.u32(t.extra, 8 * i)))
                    .map(|i| i64::from(e.u32(t.extra, 8 * i + 4) as i32)),
                _ => (0..t.vlen).find(|&i| is(e.u32(t.extra, 12 * i))).map(|i| {
                    (u64::from(e.u32(t.extra, 12 * i + 8)) << 32 | u64::from(e.u32(t.extra, 12 * i + 4)))
                        as i64
                }),
            }?;
            Some((value, id))
        })
    }

    /// A type's C name, e.g. `struct page`, `unsigned long *`,
    /// `const char *`, `char *const`, `char [65]`, as far as the chain
    /// goes.
    pub fn type_name(&self, id: u32) -> String {
        let (mut suffix, mut qualifiers) = (String::new(), Vec::new());
        let mut id = id;
        for _ in 0..MAX_CHAIN {
            let Some(t) = self.get(id) else { return named("void", &qualifiers, &suffix) };
            match t.kind {
                Kind::Ptr => {
                    // Qualifiers met before a pointer qualify the pointer.
                    suffix = format!("*{}{suffix}", qualifiers.join(" "));
                    qualifiers.clear();
                }
                Kind::Const | Kind::Volatile | Kind::Restrict => {
                    qualifiers.push(match t.kind {
                        Kind::Const => "const",
                        Kind::Volatile => "volatile",
                        _ => "restrict",
                    });
                }
                Kind::Array => {
                    let (element, count) = self.array(t).unwrap_or((0, 0));
                    suffix.push_str(&format!("[{count}]"));
                    id = element;
                    continue;
                }
                Kind::FuncProto => return named("function", &qualifiers, &suffix),
                Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 => {
                    let name = if t.name.is_empty() { "<anonymous>" } else { t.name };
                    return named(&format!("{} {name}", t.kind.keyword()), &qualifiers, &suffix);
                }
                _ if !t.name.is_empty() => return named(t.name, &qualifiers, &suffix),
                _ => {}
            }
            id = t.size_or_type;
        }
        named("?", &qualifiers, &suffix)
    }

    fn name_of(&self, id: u32) -> &str {
        self.get(id).map_or("", |t| t.name)
    }

    /// An array's element type and count.
    fn array(&self, t: Type<'_>) -> Option<(u32, u32)> {
        (t.kind == Kind::Array).then(|| (self.endian.u32(t.extra, 0), self.endian.u32(t.extra, 8)))
    }

    fn string(&self, offset: u32) -> Option<&str> {
        std::str::from_utf8(self.raw_string(offset)?).ok()
    }

    /// The bytes of the string at `offset`, without its NUL.
    fn raw_string(&self, offset: u32) -> Option<&[u8]> {
        if offset < self.first_string {
            return self.base.as_ref()?.raw_string(offset);
        }
        let offset = offset - self.first_string;
        let (start, end) = self.strings;
        let at = start.checked_add(offset as usize).filter(|&a| a < end)?;
        let len = self.bytes[at..end].iter().position(|&b| b == 0)?;
        Some(&self.bytes[at..at + len])
    }
}

impl Type<'_> {
    /// The type it refers to (pointers, typedefs, qualifiers, functions,
    /// variables).
    pub fn referred(&self) -> Option<u32> {
        matches!(
            self.kind,
            Kind::Ptr
                | Kind::Typedef
                | Kind::Volatile
                | Kind::Const
                | Kind::Restrict
                | Kind::Func
                | Kind::Var
                | Kind::TypeTag
        )
        .then_some(self.size_or_type)
    }
}

/// Longer than any chain of typedefs and qualifiers, or nesting of
/// anonymous members, in a real kernel.
const MAX_CHAIN: usize = 64;

/// Members one lookup may visit, through anonymous members: more than
/// the largest struct of a real kernel with all it nests.
const MAX_MEMBERS_VISITED: usize = 1 << 16;

/// `qualifiers base suffix`, spaced as C is written.
fn named(base: &str, qualifiers: &[&str], suffix: &str) -> String {
    let mut out = String::new();
    for q in qualifiers {
        out.push_str(q);
        out.push(' ');
    }
    out.push_str(base);
    if !suffix.is_empty() {
        out.push(' ');
        out.push_str(suffix);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A BTF blob of `records` (each: name, kind, vlen, kind flag, size or
    /// type, then the kind's words), with names added to the strings.
    pub(super) struct Blob {
        types: Vec<u8>,
        strings: Vec<u8>,
    }

    impl Blob {
        pub(super) fn new() -> Self {
            Blob { types: Vec::new(), strings: vec![0] }
        }

        pub(super) fn name(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let at = self.strings.len() as u32;
            self.strings.extend_from_slice(name.as_bytes());
            self.strings.push(0);
            at
        }

        pub(super) fn record(
            &mut self,
            name: &str,
            kind: u32,
            vlen: u32,
            flag: bool,
            size: u32,
            words: &[u32],
        ) {
            let name = self.name(name);
            let info = u32::from(flag) << 31 | kind << 24 | vlen;
            for word in [name, info, size].iter().chain(words) {
                self.types.extend_from_slice(&word.to_le_bytes());
            }
        }

        pub(super) fn bytes(&self) -> Vec<u8> {
            let mut out = vec![0x9f, 0xeb, 1, 0];
            let types = self.types.len() as u32;
            for word in [24, 0, types, types, self.strings.len() as u32] {
                out.extend_from_slice(&word.to_le_bytes());
            }
            out.extend_from_slice(&self.types);
            out.extend_from_slice(&self.strings);
            out
        }
    }

    /// struct outer { long a; union { int b; struct { int c:3, d:5; }; }; char e[7]; }
    /// with ids 1 long, 2 int, 3 char, 4 the anonymous struct, 5 the
    /// anonymous union, 6 char[7], 7 struct outer, 8 typedef outer_t.
    pub(super) fn outer() -> Blob {
        let mut b = Blob::new();
        b.record("long", 1, 0, false, 8, &[64 | 1 << 24]);
        b.record("int", 1, 0, false, 4, &[32 | 1 << 24]);
        b.record("char", 1, 0, false, 1, &[8]);
        let (c, d) = (b.name("c"), b.name("d"));
        b.record("", 4, 2, true, 4, &[c, 2, 3 << 24, d, 2, 5 << 24 | 3]);
        let bname = b.name("b");
        b.record("", 5, 2, false, 4, &[bname, 2, 0, 0, 4, 0]);
        b.record("", 3, 0, false, 0, &[3, 2, 7]);
        let (a, e) = (b.name("a"), b.name("e"));
        b.record("outer", 4, 3, false, 24, &[a, 1, 0, 0, 5, 64, e, 6, 96]);
        b.record("outer_t", 8, 0, false, 7, &[]);
        b
    }

    #[test]
    fn members_through_anonymous_unions_and_bitfields() {
        let btf = Btf::parse(outer().bytes()).unwrap();
        assert_eq!(btf.len(), 8);
        let t = btf.aggregate("outer").unwrap();
        assert_eq!(btf.size_of(t.id), Some(24));
        assert_eq!(btf.member(t, "a"), Some(Member { bit_offset: 0, bitfield_size: 0, type_id: 1 }));
        assert_eq!(btf.member(t, "b").unwrap().offset(), 8);
        assert_eq!(btf.member(t, "d"), Some(Member { bit_offset: 67, bitfield_size: 5, type_id: 2 }));
        assert_eq!(btf.member(t, "e").unwrap().offset(), 12);
        assert_eq!(btf.size_of(btf.member(t, "e").unwrap().type_id), Some(7));
        assert_eq!(btf.type_name(6), "char [7]");
        assert_eq!(btf.member(t, "f"), None);
        assert_eq!(btf.aggregate("outer_t").unwrap().id, 7, "a typedef of a struct answers");
    }

    #[test]
    fn enumerators_of_both_widths() {
        let mut b = Blob::new();
        let (x, y) = (b.name("X"), b.name("Y"));
        b.record("small", 6, 2, false, 4, &[x, 3, y, -2i32 as u32]);
        let z = b.name("Z");
        b.record("big", 19, 1, false, 8, &[z, 5, 1]);
        let btf = Btf::parse(b.bytes()).unwrap();
        assert_eq!(btf.enumerator("Y"), Some((-2, 1)));
        assert_eq!(btf.enumerator("Z"), Some(((1 << 32) + 5, 2)));
        assert_eq!(btf.enumerator("W"), None);
    }

    #[test]
    fn a_split_blob_continues_the_base() {
        let base = Arc::new(Btf::parse(outer().bytes()).unwrap());
        let mut b = Blob::new();
        b.strings = vec![0]; // its own strings start after the base's
        let base_strings = outer().strings.len() as u32;
        let p = b.name("mod_ptr") + base_strings - 1;
        b.types.clear();
        for word in [p, 2 << 24, 7] {
            b.types.extend_from_slice(&word.to_le_bytes());
        }
        let mut bytes = b.bytes();
        // Drop the leading NUL of its strings: a split blob's first string
        // offset is the base's length.
        let strings_at = 24 + 12;
        bytes.remove(strings_at);
        bytes[20..24].copy_from_slice(&(b.strings.len() as u32 - 1).to_le_bytes());
        let module = Btf::parse_split(bytes, base).unwrap();
        let t = module.get(9).unwrap();
        assert_eq!((t.kind, t.name, t.referred()), (Kind::Ptr, "mod_ptr", Some(7)));
        assert_eq!(module.type_name(9), "struct outer *");
        assert_eq!(module.get(7).unwrap().name, "outer", "ids below its own are the base's");
    }

    #[test]
    fn bad_blobs_say_where() {
        let good = outer().bytes();
        let mut bad = good.clone();
        bad[0] = 0;
        assert!(Btf::parse(bad).unwrap_err().to_string().contains("magic"));
        let mut bad = good.clone();
        bad[12] = 0xff; // the type section longer than the blob
        assert!(Btf::parse(bad).unwrap_err().to_string().contains("type section"));
        let mut bad = good.clone();
        bad[24 + 7] = 30; // kind 30
        let e = Btf::parse(bad).unwrap_err().to_string();
        assert_eq!(e, "BTF at byte 0x18: type kind 30");
        let mut bad = good;
        bad[24..28].copy_from_slice(&0xffffu32.to_le_bytes()); // a name past the strings
        assert!(Btf::parse(bad).unwrap_err().to_string().contains("outside the strings"));
    }
}
