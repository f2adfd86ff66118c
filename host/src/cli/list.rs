//! `vmdump list s3://BUCKET/PREFIX`: the fleet's dumps in one table, from
//! the triage objects put beside them (host, time, release, panic, top
//! frames), with each dump's size and whether it is complete (its header's
//! flag), grouped by crash signature; `--json` for tools.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Context;
use clap::Args;
use serde::Serialize;
use serde_json::Value;
use vmdump_format::kdump::{DUMP_DH_COMPRESSED_INCOMPLETE, DiskDumpHeader};

use super::object::TRIAGE_SUFFIX;
use crate::store::{Listed, ObjectName, Store, get_object, list_objects};

/// Arguments of `vmdump list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Where the dumps are: `s3://BUCKET/PREFIX`.
    pub prefix: String,
}

/// One dump, as its triage and its object say.
#[derive(Debug, Serialize)]
struct Dump {
    /// The dump's object (`s3://BUCKET/KEY`).
    object: String,
    host: Option<String>,
    crash_time: Option<String>,
    release: Option<String>,
    panic: Option<String>,
    /// The innermost frames' functions.
    top_frames: Vec<String>,
    /// Bytes of the dump's object; none when it is not there (its upload failed).
    size: Option<u64>,
    /// Whether the dump's header says it is complete; none when there is no dump.
    complete: Option<bool>,
}

/// Dumps of one crash signature.
#[derive(Debug, Serialize)]
struct Group {
    signature: String,
    dumps: Vec<Dump>,
}

/// Frames that name the crash: the first three with a symbol, past the
/// kernel's own panic and report machinery (the same in every crash).
const SIGNATURE_FRAMES: usize = 3;
const MACHINERY: [&str; 16] = [
    "panic",
    "vpanic",
    "nmi_panic",
    "_printk",
    "printk",
    "vprintk",
    "vprintk_emit",
    "vprintk_default",
    "dump_stack",
    "dump_stack_lvl",
    "__warn",
    "report_bug",
    "die",
    "oops_end",
    "__crash_kexec",
    "crash_kexec",
];

/// Runs `vmdump list`.
///
/// # Errors
/// Not an `s3://` URL, or the store's error in listing.
pub fn run(args: &ListArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let prefix = ObjectName::parse(&args.prefix)
        .with_context(|| format!("{}: not an object URL (s3://BUCKET/PREFIX)", args.prefix))?;
    let profile = crate::profile::ProfileSource::of_process(None).load()?;
    let (store, _) = super::object::open_store(&profile)?;
    let listed = list_objects(&store, &prefix.bucket, &prefix.key)?;
    let sizes: BTreeMap<&str, u64> = listed.iter().map(|l| (l.key.as_str(), l.size)).collect();
    let mut groups: BTreeMap<String, Vec<Dump>> = BTreeMap::new();
    for Listed { key, .. } in listed.iter().filter(|l| l.key.ends_with(TRIAGE_SUFFIX)) {
        let dump_key = &key[..key.len() - TRIAGE_SUFFIX.len()];
        let dump = describe(&store, &prefix.bucket, key, dump_key, sizes.get(dump_key).copied());
        groups.entry(signature(&dump)).or_default().push(dump);
    }
    let groups: Vec<Group> =
        groups.into_iter().map(|(signature, dumps)| Group { signature, dumps }).collect();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&groups)?)?;
    } else {
        write!(out, "{}", table(&groups))?;
    }
    Ok(())
}

/// The dump `dump_key` from its triage object `triage_key`; what cannot be
/// read is left out (and said on stderr).
fn describe(store: &Store, bucket: &str, triage_key: &str, dump_key: &str, size: Option<u64>) -> Dump {
    let name = |key: &str| ObjectName { bucket: bucket.into(), key: key.into() };
    let (triage, host) = match get_object(store, &name(triage_key), None) {
        Ok(r) => (
            serde_json::from_slice::<Value>(&r.body).unwrap_or(Value::Null),
            r.header("x-amz-meta-vmdump-host").map(String::from),
        ),
        Err(e) => {
            eprintln!("vmdump: warning: {e}");
            (Value::Null, None)
        }
    };
    let text = |field: &str| triage[field].as_str().map(String::from);
    let top_frames = triage["stack"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["guess"] != Value::Bool(true))
        .filter_map(|f| f["symbol"].as_str())
        .map(|s| s.split('+').next().unwrap_or(s).to_string())
        .filter(|function| !MACHINERY.contains(&function.as_str()))
        .take(SIGNATURE_FRAMES)
        .collect();
    let complete = size.map(|_| header_complete(store, &name(dump_key)));
    Dump {
        object: name(dump_key).to_string(),
        host,
        crash_time: text("crash_time"),
        release: text("release"),
        panic: text("panic"),
        top_frames,
        size,
        complete: complete.flatten(),
    }
}

/// Whether the dump's header is free of the INCOMPLETE flag (its first
/// block, fetched alone); none if it cannot be read.
fn header_complete(store: &Store, name: &ObjectName) -> Option<bool> {
    let response = get_object(store, name, Some("0-4095")).ok()?;
    let header = DiskDumpHeader::decode(&response.body).ok()?;
    Some(header.status & DUMP_DH_COMPRESSED_INCOMPLETE == 0)
}

/// What names a crash: its innermost functions, else its panic message
/// with the numbers taken out, else "unknown".
fn signature(dump: &Dump) -> String {
    if !dump.top_frames.is_empty() {
        return dump.top_frames.join(" < ");
    }
    match &dump.panic {
        Some(panic) => panic.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect(),
        None => "unknown".into(),
    }
}

/// The groups as text: a line each signature, a row each dump.
fn table(groups: &[Group]) -> String {
    let mut text = String::new();
    for group in groups {
        text += &format!(
            "{} ({} dump{})\n",
            group.signature,
            group.dumps.len(),
            if group.dumps.len() == 1 { "" } else { "s" }
        );
        for d in &group.dumps {
            let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
            let state = match d.complete {
                Some(true) => "complete",
                Some(false) => "INCOMPLETE",
                None if d.size.is_some() => "unreadable",
                None => "no dump",
            };
            let size = d.size.map_or("-".into(), |s| format!("{:.1} MiB", s as f64 / f64::from(1 << 20)));
            text += &format!(
                "  {:<16} {:<25} {:<22} {:>10} {:<10} {}\n    panic: {}\n",
                or(&d.host),
                or(&d.crash_time),
                or(&d.release),
                size,
                state,
                d.object,
                or(&d.panic)
            );
        }
    }
    text
}
