//! `vmdump triage`: the first things to know of a crash, from an ELF
//! vmcore or a dump, as text or JSON (docs/triage.md).

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

use crate::kernel::KernelView;
use crate::plugin::SearchPath;
use crate::read::Modules;
use crate::triage::Triage;

/// Options of `vmdump triage`.
#[derive(Debug, clap::Args)]
pub struct TriageArgs {
    /// An ELF vmcore or a kdump-compressed dump.
    pub input: PathBuf,
    /// Another piece of a split dump given as INPUT (repeatable).
    #[arg(long = "piece", value_name = "FILE")]
    pub pieces: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The triage of `input` (with the other `pieces` of a split dump).
///
/// # Errors
/// The input cannot be opened, or has no VMCOREINFO.
pub fn triage_of(
    input: &std::path::Path,
    pieces: &[PathBuf],
    plugin_dirs: &[PathBuf],
) -> anyhow::Result<Triage> {
    let modules = Modules::new(SearchPath::from_process(plugin_dirs, &[]));
    let opened =
        crate::input::open(&[std::slice::from_ref(&input.to_path_buf()), pieces].concat(), &modules)?;
    let kernel = KernelView::open(opened.as_ref())
        .with_context(|| format!("reading the kernel of {}", input.display()))?
        .with_context(|| format!("{}: the input has no VMCOREINFO", input.display()))?;
    Ok(Triage::read(&kernel, opened.notes()))
}

/// Runs `vmdump triage`.
///
/// # Errors
/// As [`triage_of`], or writing the output.
pub fn run(args: &TriageArgs, plugin_dirs: &[PathBuf], out: &mut dyn Write) -> anyhow::Result<()> {
    let triage = triage_of(&args.input, &args.pieces, plugin_dirs)?;
    let text = if args.json { serde_json::to_string_pretty(&triage)? + "\n" } else { text(&triage) };
    out.write_all(text.as_bytes()).context("writing the triage")
}

/// The triage as text, a line a fact.
pub fn text(t: &Triage) -> String {
    let mut s = String::new();
    let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let _ = writeln!(s, "kernel:      {}", or(&t.release));
    let _ = writeln!(s, "build id:    {}", or(&t.build_id));
    let _ = writeln!(s, "crash time:  {}", or(&t.crash_time));
    let uptime = t.uptime_seconds.map_or("?".into(), |u| format!("{u:.6} s (the kernel log's last record)"));
    let _ = writeln!(s, "uptime:      {uptime}");
    let _ = writeln!(s, "panic:       {}", or(&t.panic));
    for oops in &t.oops {
        let _ = writeln!(s, "oops:        {oops}");
    }
    let _ = writeln!(s, "cpu:         {}", t.cpu.map_or("?".into(), |c| c.to_string()));
    let task =
        t.task.as_ref().map(|task| format!("pid {} ({})", task.pid, task.comm.as_deref().unwrap_or("?")));
    let _ = writeln!(s, "task:        {}", task.unwrap_or_else(|| "?".into()));
    match &t.taint {
        Some(taint) if taint.mask == 0 => {
            let _ = writeln!(s, "tainted:     G (not tainted)");
        }
        Some(taint) => {
            let _ =
                writeln!(s, "tainted:     {} ({:#x}: {})", taint.letters, taint.mask, taint.flags.join(", "));
        }
        None => {}
    }
    if let Some(ip) = &t.instruction_pointer {
        let _ = writeln!(s, "ip:          {}", frame(ip));
    }
    if let Some(method) = t.stack_method {
        let _ = writeln!(s, "stack ({}):", method.describe());
        for f in &t.stack {
            let _ = writeln!(s, "  {}", frame(f));
        }
    }
    for why in &t.missing {
        let _ = writeln!(s, "missing:     {why}");
    }
    s
}

fn frame(f: &crate::triage::Frame) -> String {
    let module = f.module.as_ref().map_or(String::new(), |m| format!(" [{m}]"));
    let guess = if f.guess { "? " } else { "" };
    format!("{:016x} {guess}{}{module}", f.address, f.symbol.as_deref().unwrap_or("?"))
}
