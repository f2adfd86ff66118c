//! `vmdump symbols`: the dumped kernel's own map, read from the dump with
//! no vmlinux: its symbols (kallsyms) and its types (BTF).

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::crypt::Recipients;
use crate::kernel::{KernelView, MapError};
use crate::plugin::SearchPath;
use crate::read::Modules;

/// Options of `vmdump symbols`.
#[derive(Debug, clap::Args)]
pub struct SymbolsArgs {
    /// An ELF vmcore or a kdump-compressed dump.
    pub input: PathBuf,
    /// What to look up: a symbol (`init_task`), an address (`0xffff...`:
    /// the symbol it is in), a type (`page`: its size), a member
    /// (`page.flags`, `task_struct.mm.pgd`: its offset, size and type) or
    /// an enumerator (`NR_FREE_PAGES`). Without any, every symbol of the
    /// kernel and of its modules, as /proc/kallsyms lists them.
    pub names: Vec<String>,
    /// Another piece of a split dump given as INPUT (repeatable).
    #[arg(long = "piece", value_name = "FILE")]
    pub pieces: Vec<PathBuf>,
    /// Write the BTF read from the dump into DIR, as /sys/kernel/btf/ showed
    /// it: DIR/vmlinux, and a file for each module with BTF.
    #[arg(long, value_name = "DIR")]
    pub btf: Option<PathBuf>,
    /// Overwrite the files of --btf DIR that exist (as `vmdump dump -f`).
    #[arg(short = 'f', long)]
    pub force: bool,
}

/// Runs `vmdump symbols`.
///
/// # Errors
/// The input cannot be read, its kernel's symbols or types cannot, or a
/// name is none of them (after every other name is printed).
pub fn run(args: &SymbolsArgs, plugin_dirs: &[PathBuf], out: &mut dyn Write) -> anyhow::Result<()> {
    let context = || format!("reading the kernel's map in {}", args.input.display());
    let modules = Modules::new(SearchPath::from_process(plugin_dirs, &[]));
    let input =
        crate::input::open(&[std::slice::from_ref(&args.input), args.pieces.as_slice()].concat(), &modules)?;
    let kernel =
        KernelView::open(input.as_ref()).with_context(context)?.context("the input has no VMCOREINFO")?;
    if let Some(dir) = &args.btf {
        write_btf(&kernel, dir, args.force).with_context(context)?;
    }
    if args.names.is_empty() {
        if args.btf.is_none() {
            list_all(&kernel, out).with_context(context)?;
        }
        return Ok(());
    }
    let mut unknown = Vec::new();
    for name in &args.names {
        match describe(&kernel, name) {
            Ok(Some(text)) => out.write_all(text.as_bytes()).context("writing to stdout")?,
            Ok(None) => unknown.push(name.as_str()),
            Err(e) => return Err(e).with_context(context),
        }
    }
    if !unknown.is_empty() {
        bail!(
            "the kernel of {} has no symbol, type, member or enumerator {}",
            args.input.display(),
            unknown.join(", ")
        );
    }
    Ok(())
}

/// Every symbol: address, type, name, and after a tab the module's name
/// in brackets.
fn list_all(kernel: &KernelView<'_>, out: &mut dyn Write) -> anyhow::Result<()> {
    let symbols = kernel.symbols().map_err(map_error)?;
    let mut out = std::io::BufWriter::new(out);
    for s in symbols.iter() {
        writeln!(out, "{:016x} {} {}", s.address, s.kind, s.name).context("writing to stdout")?;
    }
    let modules = match kernel.modules() {
        Ok(modules) => modules.iter().collect(),
        Err(e) => {
            eprintln!("vmdump: warning: the modules' symbols are not listed: {e}");
            Vec::new()
        }
    };
    for module in modules {
        for s in module.symbols() {
            writeln!(out, "{:016x} {} {}\t[{}]", s.address, s.kind, s.name, module.name)
                .context("writing to stdout")?;
        }
    }
    out.flush().context("writing to stdout")
}

/// The kernel's BTF and each module's, into `dir` (made if missing).
fn write_btf(kernel: &KernelView<'_>, dir: &Path, force: bool) -> anyhow::Result<()> {
    let types = kernel.types().map_err(map_error)?;
    super::dump::create_private_dir(dir)?;
    super::dump::write_whole_file(&dir.join("vmlinux"), types.vmlinux().bytes(), &Recipients::none(), force)?;
    for module in kernel.modules().map_err(map_error)?.iter().filter(|m| m.btf_range().is_some()) {
        let btf = types.read_module(kernel.memory(), module).map_err(|e| anyhow::anyhow!("{e}"))?;
        super::dump::write_whole_file(&dir.join(&module.name), btf.bytes(), &Recipients::none(), force)?;
    }
    Ok(())
}

/// What the kernel knows by `name`, a line each; `None` when nothing.
fn describe(kernel: &KernelView<'_>, name: &str) -> anyhow::Result<Option<String>> {
    let symbols = kernel.symbols().map_err(map_error)?;
    let mut text = String::new();
    if let Some(address) = parse_address(name) {
        return Ok(symbols
            .containing(address)
            .map(|(s, offset)| format!("{address:016x} {}+{offset:#x}\n", s.name)));
    }
    let sized =
        |s: &crate::kernel::Symbol<'_>| s.size.map_or(String::new(), |size| format!(" size {size:#x}"));
    for s in symbols.named(name) {
        let _ = writeln!(text, "{:016x} {} {}{}", s.address, s.kind, s.name, sized(&s));
    }
    for module in kernel.modules().into_iter().flat_map(|m| m.iter()) {
        for s in module.symbols().filter(|s| s.name == name) {
            let _ =
                writeln!(text, "{:016x} {} {}{}\t[{}]", s.address, s.kind, s.name, sized(&s), module.name);
        }
    }
    // Types only when there are any: a kernel without BTF still answers
    // for its symbols.
    if let Ok(types) = kernel.types() {
        let btf = types.vmlinux();
        match name.split_once('.') {
            Some((outer, path)) => {
                if let Ok(member) = types.member(outer, path) {
                    let size = btf.size_of(member.type_id).map_or("?".into(), |s| s.to_string());
                    let bits = match member.bitfield_size {
                        0 => String::new(),
                        n => format!(
                            " bits {}..{}",
                            member.bit_offset % 8,
                            member.bit_offset % 8 + u64::from(n)
                        ),
                    };
                    let _ = writeln!(
                        text,
                        "{name}: offset {} size {size}{bits} {}",
                        member.offset(),
                        btf.type_name(member.type_id)
                    );
                }
            }
            None => {
                if let Some(t) = btf.aggregate(name) {
                    let size = btf.size_of(t.id).map_or("?".into(), |s| s.to_string());
                    let _ = writeln!(text, "{}: size {size}", btf.type_name(t.id));
                }
                if let Some((value, id)) = btf.enumerator(name) {
                    let _ = writeln!(text, "{name} = {value} ({})", btf.type_name(id));
                }
            }
        }
    }
    Ok((!text.is_empty()).then_some(text))
}

/// The kernel view keeps its errors (each is read once): a copy of the message.
fn map_error(e: &MapError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

fn parse_address(name: &str) -> Option<u64> {
    u64::from_str_radix(name.strip_prefix("0x")?, 16).ok()
}
