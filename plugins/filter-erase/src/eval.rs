//! The config, run on the dumped kernel: each expression resolved through
//! kallsyms (the symbol) and BTF (its members, pointers followed), each
//! erase asked of the host, each loop walked in the dump's memory.

use vmdump_sdk::{Fill, Kernel, KernelError, ServiceError, Space};

use crate::config::{Command, Erase, Expr, Size, Walk};

/// Bytes of a `char *` string erased at most (makedumpfile's limit).
const MAX_STRING: usize = 1024;
/// Elements a loop visits at most (a list that never comes back is an error).
pub const MAX_ELEMENTS: usize = 1 << 20;

/// A place in the kernel's memory and what is there.
#[derive(Debug, Clone)]
struct Value {
    addr: u64,
    /// Its C type, when known.
    ty: Option<String>,
    /// Its size, when known.
    size: Option<u64>,
}

/// The loop variable and its current element.
type Binding<'b> = Option<(&'b str, &'b Value)>;

/// A C type name without qualifiers.
fn clean(ty: &str) -> String {
    ty.split_whitespace()
        .filter(|w| !matches!(*w, "const" | "volatile" | "restrict"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The pointed-to type of a pointer type (`struct mm_struct *` → `struct mm_struct`).
fn pointee(ty: &str) -> Option<String> {
    clean(ty).strip_suffix('*').map(|p| p.trim_end().to_owned())
}

/// An array type's element type and count (`char [16]` → `char`, 16).
fn array(ty: &str) -> Option<(String, u64)> {
    let ty = clean(ty);
    let open = ty.rfind('[')?;
    let count = ty[open + 1..].strip_suffix(']')?.parse().ok()?;
    Some((ty[..open].trim_end().to_owned(), count))
}

/// Runs the config's commands.
pub struct Eraser<'k> {
    kernel: &'k Kernel<'k>,
    fill: u8,
}

/// Why a command could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EraseError {
    /// The message, with its line.
    pub message: String,
    /// Whether a name is not in the dumped kernel (a module not loaded,
    /// a kernel without it): what `skip-missing` skips.
    pub missing: bool,
}

impl From<String> for EraseError {
    fn from(message: String) -> Self {
        Self { message, missing: false }
    }
}

fn at_line(line: usize) -> impl Fn(KernelError) -> EraseError {
    move |e| EraseError { message: format!("line {line}: {e}"), missing: e.cause == ServiceError::NotFound }
}

impl<'k> Eraser<'k> {
    /// Erases with `fill` (makedumpfile's is `X`).
    pub fn new(kernel: &'k Kernel<'k>, fill: u8) -> Self {
        Self { kernel, fill }
    }

    /// Runs one command: the erases it asks for, or the first error (with its line).
    pub fn run(&self, command: &Command) -> Result<(), EraseError> {
        match command {
            Command::Erase(e) => self.erase(e, None),
            Command::For { var, list, walk, body, line } => self.for_each(var, list, walk, body, *line),
        }
    }

    /// The value `expr` names.
    fn resolve(&self, expr: &Expr, bound: Binding<'_>, line: usize) -> Result<Value, EraseError> {
        let mut v = match bound {
            Some((var, value)) if *var == expr.root => value.clone(),
            _ => {
                let symbol = self.kernel.symbol(&expr.root).map_err(at_line(line))?;
                let ty = expr.root_type.clone();
                let size = match &ty {
                    Some(t) => Some(self.kernel.type_size(t).map_err(at_line(line))?),
                    None => (symbol.size > 0).then_some(symbol.size),
                };
                Value { addr: symbol.address, ty, size }
            }
        };
        for member in &expr.members {
            let ty = v.ty.take().ok_or_else(|| {
                format!("line {line}: the type of `{}` is not known: name it with `type C-TYPE`", expr.root)
            })?;
            let (base, outer) = match pointee(&ty) {
                Some(inner) => (self.kernel.read_u64(v.addr).map_err(at_line(line))?, inner),
                None => (v.addr, clean(&ty)),
            };
            if base == 0 {
                return Err(format!("line {line}: `{expr}`: a null pointer before `.{member}`").into());
            }
            let found = self.kernel.member(&outer, member).map_err(at_line(line))?;
            v = Value { addr: base + found.offset, ty: Some(found.type_name), size: Some(found.size) };
        }
        Ok(v)
    }

    /// The integer value of `expr` (1, 2, 4 or 8 bytes, little-endian).
    fn integer(&self, expr: &Expr, bound: Binding<'_>, line: usize) -> Result<u64, EraseError> {
        let v = self.resolve(expr, bound, line)?;
        let size = v.size.filter(|s| matches!(s, 1 | 2 | 4 | 8));
        let size =
            size.ok_or_else(|| format!("line {line}: `{expr}` is not an integer of 1, 2, 4 or 8 bytes"))?;
        let mut bytes = [0u8; 8];
        self.kernel.read(Space::KernelVirtual, v.addr, &mut bytes[..size as usize]).map_err(at_line(line))?;
        Ok(u64::from_le_bytes(bytes))
    }

    /// The length of the C string at `addr` (to its NUL, at most [`MAX_STRING`]).
    fn string_len(&self, addr: u64, line: usize) -> Result<u64, EraseError> {
        let mut len = 0;
        let mut chunk = [0u8; 64];
        while len < MAX_STRING {
            // Up to the end of the page, so that a string ending before an unmapped page reads.
            let room = (4096 - (addr + len as u64) % 4096).min(chunk.len() as u64) as usize;
            self.kernel
                .read(Space::KernelVirtual, addr + len as u64, &mut chunk[..room])
                .map_err(at_line(line))?;
            if let Some(nul) = chunk[..room].iter().position(|&b| b == 0) {
                return Ok((len + nul) as u64);
            }
            len += room;
        }
        Ok(MAX_STRING as u64)
    }

    /// Runs one erase.
    fn erase(&self, e: &Erase, bound: Binding<'_>) -> Result<(), EraseError> {
        let line = e.line;
        let v = self.resolve(&e.target, bound, line)?;
        let what = e.target.to_string();
        let target = v.ty.as_deref().and_then(pointee);
        let bytes = |n: u64| -> Result<(u64, u64, Fill), EraseError> {
            // Through a pointer, the bytes it points to.
            let addr = match target {
                Some(_) => self.kernel.read_u64(v.addr).map_err(at_line(line))?,
                None => v.addr,
            };
            Ok((addr, n, Fill::Byte(self.fill)))
        };
        let (addr, len, fill) = match &e.size {
            Size::Nullify if v.ty.is_some() && target.is_none() => {
                return Err(format!("line {line}: `{what}` is not a pointer: nullify needs one").into());
            }
            Size::Nullify => (v.addr, 8, Fill::Nullify),
            Size::Bytes(n) => bytes(*n)?,
            Size::Of(x) => bytes(self.integer(x, bound, line)?)?,
            Size::Typed => match target.as_deref() {
                Some("void") => {
                    return Err(
                        format!("line {line}: `{what}` is a void pointer: give a size or nullify").into()
                    );
                }
                Some(inner) => {
                    let addr = self.kernel.read_u64(v.addr).map_err(at_line(line))?;
                    let n = match inner {
                        _ if addr == 0 => 0,
                        "char" | "unsigned char" | "signed char" => self.string_len(addr, line)?,
                        _ => self.kernel.type_size(inner).map_err(at_line(line))?,
                    };
                    (addr, n, Fill::Byte(self.fill))
                }
                None => {
                    let n = v
                        .size
                        .ok_or_else(|| format!("line {line}: the size of `{what}` is not known: give one"))?;
                    (v.addr, n, Fill::Byte(self.fill))
                }
            },
        };
        if len == 0 || addr == 0 {
            return Ok(());
        }
        self.kernel.erase(Space::KernelVirtual, addr, len, fill, &what).map_err(at_line(line))
    }

    /// Runs the body of a loop for each element of its list.
    fn for_each(
        &self,
        var: &str,
        list: &Expr,
        walk: &Walk,
        body: &[Erase],
        line: usize,
    ) -> Result<(), EraseError> {
        let head = self.resolve(list, None, line)?;
        let each = |element: Value| body.iter().try_for_each(|e| self.erase(e, Some((var, &element))));
        let ty = head.ty.clone().ok_or_else(|| {
            format!("line {line}: the type of `{list}` is not known: name it with `type C-TYPE`")
        })?;
        match walk {
            Walk::Array => {
                let (element, count) =
                    array(&ty).ok_or_else(|| format!("line {line}: `{list}` is a `{ty}`, not an array"))?;
                let size = match pointee(&element) {
                    Some(_) => 8,
                    None => self.kernel.type_size(&element).map_err(at_line(line))?,
                };
                (0..count).try_for_each(|i| {
                    each(Value { addr: head.addr + i * size, ty: Some(element.clone()), size: Some(size) })
                })
            }
            Walk::Via(next) => {
                let (start, strukt) = match pointee(&ty) {
                    Some(inner) => (self.kernel.read_u64(head.addr).map_err(at_line(line))?, inner),
                    None => (head.addr, clean(&ty)),
                };
                let offset = self.kernel.member(&strukt, next).map_err(at_line(line))?.offset;
                let size = self.kernel.type_size(&strukt).ok();
                let mut node = start;
                for _ in 0..MAX_ELEMENTS {
                    if node == 0 {
                        return Ok(());
                    }
                    each(Value { addr: node, ty: Some(strukt.clone()), size })?;
                    node = self.kernel.read_u64(node + offset).map_err(at_line(line))?;
                    if node == start {
                        return Ok(());
                    }
                }
                Err(format!("line {line}: `{list}` via {next}: more than {MAX_ELEMENTS} elements").into())
            }
            Walk::Within(strukt, member) => {
                let offset = self.kernel.member(strukt, member).map_err(at_line(line))?.offset;
                let size = self.kernel.type_size(strukt).ok();
                let element_type =
                    if strukt.contains(' ') { strukt.clone() } else { format!("struct {strukt}") };
                let mut pos = self.kernel.read_u64(head.addr).map_err(at_line(line))?;
                for _ in 0..MAX_ELEMENTS {
                    if pos == head.addr || pos == 0 {
                        return Ok(());
                    }
                    each(Value { addr: pos - offset, ty: Some(element_type.clone()), size })?;
                    pos = self.kernel.read_u64(pos).map_err(at_line(line))?;
                }
                Err(format!(
                    "line {line}: `{list}` within {strukt}:{member}: more than {MAX_ELEMENTS} elements"
                )
                .into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_decompose() {
        assert_eq!(pointee("struct mm_struct *").as_deref(), Some("struct mm_struct"));
        assert_eq!(pointee("const char *").as_deref(), Some("char"));
        assert_eq!(pointee("char [16]"), None);
        assert_eq!(array("char [16]"), Some(("char".into(), 16)));
        assert_eq!(array("struct page *[4]"), Some(("struct page *".into(), 4)));
        assert_eq!(array("int"), None);
    }
}
