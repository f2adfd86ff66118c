//! The panicking CPU's stack, symbolized with kallsyms (and the modules'
//! symbols). arm64 kernels keep frame pointers: the chain of (fp, lr)
//! pairs is followed. Debian's x86_64 kernels have none (they unwind with
//! ORC, which the dump does not describe to vmdump): the stack is scanned
//! for words that are text addresses, as the kernel's own trace does; those
//! right after a call instruction are return addresses, the others stale
//! values, shown with `? ` as the kernel shows its unreliable frames.

use serde::Serialize;

use super::registers::Registers;
use crate::kernel::KernelView;
use vmdump_format::machine::Machine;

/// How the stack was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackMethod {
    /// The frame pointer chain.
    FramePointers,
    /// A scan of the stack for text addresses (no frame pointers).
    Scan,
}

impl StackMethod {
    /// How the text report says it.
    pub fn describe(self) -> &'static str {
        match self {
            StackMethod::FramePointers => "frame pointers",
            StackMethod::Scan => {
                "a scan of the stack for text addresses, `? ` where no call precedes (no frame pointers)"
            }
        }
    }
}

/// One frame: an address and what it is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Frame {
    /// The address (a return address, or the instruction pointer).
    pub address: u64,
    /// `symbol+0xoffset/0xsize`, as the kernel prints it, when known.
    pub symbol: Option<String>,
    /// The module it is in, if not the kernel.
    pub module: Option<String>,
    /// A text address found on the stack that no call instruction
    /// precedes: a stale value, not a return address.
    pub guess: bool,
}

/// The size of a kernel stack (THREAD_SIZE of x86_64 and arm64 with 4 KiB
/// pages and no KASAN); stacks are aligned to it.
const STACK_SIZE: u64 = 16 << 10;
/// Most frames reported.
const MAX_FRAMES: usize = 64;

/// The instruction pointer and the stack of the CPU of `regs`.
///
/// # Errors
/// No symbols to tell text from data, or a stack pointer whose stack
/// cannot be read.
pub fn unwind(kernel: &KernelView<'_>, regs: &Registers) -> Result<(Frame, Vec<Frame>, StackMethod), String> {
    kernel.symbols().map_err(|e| e.to_string())?;
    let ip = frame(kernel, regs.ip, false);
    let stack_end = (regs.sp | (STACK_SIZE - 1)).wrapping_add(1);
    let (frames, method) = match kernel.memory().arch().machine() {
        Machine::Aarch64 => (frame_chain(kernel, regs.fp, stack_end), StackMethod::FramePointers),
        Machine::X86_64 | Machine::Ppc64le | Machine::Riscv64 | Machine::S390x => {
            (scan(kernel, regs.sp, stack_end)?, StackMethod::Scan)
        }
    };
    Ok((ip, frames, method))
}

/// The frames of an arm64 frame-pointer chain: at `fp`, the caller's fp
/// then the return address.
fn frame_chain(kernel: &KernelView<'_>, mut fp: u64, stack_end: u64) -> Vec<Frame> {
    let memory = kernel.memory();
    let mut frames = Vec::new();
    while fp != 0 && fp < stack_end && frames.len() < MAX_FRAMES {
        let (Ok(next), Ok(lr)) = (memory.read_u64(fp), memory.read_u64(fp + 8)) else { break };
        if lr != 0 {
            frames.push(frame(kernel, lr, true));
        }
        if next <= fp {
            break; // a chain goes up the stack
        }
        fp = next;
    }
    frames
}

/// The text addresses between `sp` and `stack_end`, guesses marked.
fn scan(kernel: &KernelView<'_>, sp: u64, stack_end: u64) -> Result<Vec<Frame>, String> {
    let memory = kernel.memory();
    let len =
        stack_end.checked_sub(sp).filter(|&l| l <= STACK_SIZE).ok_or("a stack pointer out of its stack")?;
    let mut stack = vec![0u8; len as usize];
    memory.read_virt(sp, &mut stack).map_err(|e| format!("reading the stack at {sp:#x}: {e}"))?;
    let e = memory.arch().endian();
    let mut frames = Vec::new();
    for word in stack.chunks_exact(8).map(|w| e.u64(w, 0)) {
        if frames.len() == MAX_FRAMES {
            break;
        }
        if is_text(kernel, word) {
            let guess = !follows_a_call(kernel, word);
            frames.push(Frame { guess, ..frame(kernel, word, true) });
        }
    }
    Ok(frames)
}

/// Whether `address - 1` is in a text symbol of the kernel or a module.
/// The modules' symbols (and the kernel's BTF that finds them: megabytes,
/// which an object store sends) are read only for a word where a module
/// can be and, on x86_64, that a call precedes: a stale module address on
/// an x86_64 stack is not named.
fn is_text(kernel: &KernelView<'_>, address: u64) -> bool {
    let text = |kind: char| kind.eq_ignore_ascii_case(&'t');
    let Ok(symbols) = kernel.symbols() else { return false };
    if let Some((s, _)) = symbols.containing(address.wrapping_sub(1)) {
        return text(s.kind);
    }
    let x86_64 = kernel.memory().arch().machine() == Machine::X86_64;
    may_be_in_a_module(kernel, address)
        && (!x86_64 || follows_a_call(kernel, address))
        && kernel
            .modules()
            .ok()
            .and_then(|m| m.containing(address.wrapping_sub(1)))
            .is_some_and(|(_, s, _)| text(s.kind))
}

/// How far from the kernel's text a module's code can lie where the kernel
/// keeps modules beside its image (x86_64, arm64, riscv64 and s390x call
/// between them with 32-bit relative branches: 2 GiB, and the image).
const MODULE_REACH: u64 = 4 << 30;

/// Whether `address` can be in a module: near the kernel's text;
/// anywhere on ppc64le, which loads modules in its vmalloc area.
fn may_be_in_a_module(kernel: &KernelView<'_>, address: u64) -> bool {
    if kernel.memory().arch().machine() == Machine::Ppc64le {
        return true;
    }
    let text = kernel.symbols().ok().and_then(|s| s.address_of("_stext").ok());
    text.is_none_or(|text| address.abs_diff(text) < MODULE_REACH)
}

/// Whether the bytes before `address` are an x86_64 call: `e8 rel32`, or
/// `ff /2` with a ModRM of 2, 3, 6 or 7 bytes of operands.
fn follows_a_call(kernel: &KernelView<'_>, address: u64) -> bool {
    let mut code = [0u8; 7];
    if kernel.memory().read_virt(address - 7, &mut code).is_err() {
        return false;
    }
    let before = |n: usize| code[7 - n];
    let indirect = |n: usize| before(n) == 0xff && (before(n - 1) >> 3) & 7 == 2;
    before(5) == 0xe8 || indirect(2) || indirect(3) || indirect(6) || indirect(7)
}

/// The frame of `address`; a return address is symbolized at
/// `address - 1`, inside the call (a call to a function that does not
/// return can be the last instruction of its caller).
fn frame(kernel: &KernelView<'_>, address: u64, is_return: bool) -> Frame {
    let at = address.wrapping_sub(u64::from(is_return));
    let symbolized = |name: &str, offset: u64, size: Option<u64>| {
        let offset = offset + u64::from(is_return);
        match size {
            Some(size) => format!("{name}+{offset:#x}/{size:#x}"),
            None => format!("{name}+{offset:#x}"),
        }
    };
    if let Some((s, offset)) = kernel.symbols().ok().and_then(|k| k.containing(at)) {
        return Frame {
            address,
            symbol: Some(symbolized(s.name, offset, s.size)),
            module: None,
            guess: false,
        };
    }
    let module = || kernel.modules().ok().and_then(|m| m.containing(at));
    if let Some((m, s, offset)) = may_be_in_a_module(kernel, at).then(module).flatten() {
        return Frame {
            address,
            symbol: Some(symbolized(s.name, offset, s.size)),
            module: Some(m.name.clone()),
            guess: false,
        };
    }
    Frame { address, symbol: None, module: None, guess: false }
}
