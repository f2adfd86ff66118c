//! `s3://` outputs on the command line and in the profile: the store from
//! `[output]` and the environment, the diagnosis (triage and kernel log)
//! put first as objects of their own, then the dump by multipart upload,
//! and the local fallback when the store stays away.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use anyhow::Context;

use super::dump::DumpArgs;
use crate::crypt::{EncryptedSink, Recipients};
use crate::dump::{DumpReport, dump};
use crate::kernel::KernelView;
use crate::plan::Plan;
use crate::profile::{OutputFormat, Profile};
use crate::store::{ObjectName, ObjectSink, ObjectStream, Store, StoreSettings, put_object, template_key};
use crate::triage::Triage;
use vmdump_format::sink::Sink as _;

/// The store the profile's `[output]` and the process's environment name.
///
/// # Errors
/// No key, a key file others can read, plain HTTP to another machine, a
/// bad CA file.
pub(super) fn open_store(profile: &Profile) -> anyhow::Result<(Arc<Store>, StoreSettings)> {
    let settings = StoreSettings::resolve(&profile.output, &|name| std::env::var(name).ok())?;
    let store = Store::new(settings.config.clone())?;
    Ok((Arc::new(store), settings))
}

/// The suffixes of the objects put beside a dump.
pub const TRIAGE_SUFFIX: &str = ".triage.json";
/// The kernel log's.
pub const DMESG_SUFFIX: &str = ".dmesg.txt";

/// Object metadata of a dump's objects: what `vmdump list` and the store's
/// own search show without reading the objects. S3 metadata is ASCII:
/// other characters become `?`, and each value is cut at 200.
fn metadata(triage: &Triage, host: &str, encrypted: bool) -> Vec<(&'static str, String)> {
    let clean = |text: &str| -> String {
        text.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).take(200).collect()
    };
    let mut fields = vec![("x-amz-meta-vmdump-host", clean(host))];
    if encrypted {
        // The panic message and the release say what ran: not in the clear.
        fields.push(("x-amz-meta-vmdump-encrypted", "yes".into()));
        return fields;
    }
    let facts = [
        ("x-amz-meta-vmdump-release", &triage.release),
        ("x-amz-meta-vmdump-build-id", &triage.build_id),
        ("x-amz-meta-vmdump-crash-time", &triage.crash_time),
        ("x-amz-meta-vmdump-panic", &triage.panic),
    ];
    fields.extend(facts.into_iter().filter_map(|(name, value)| Some((name, clean(value.as_deref()?)))));
    fields
}

/// The crashed machine's host name, from the dump's utsname.
fn host_name(plan: &Plan<'_>) -> String {
    plan.utsname().map(|u| String::from_utf8_lossy(u.get(1)).into_owned()).unwrap_or_default()
}

/// Puts the triage (JSON) and the kernel log beside `name`, before the
/// dump: a dump whose upload fails still leaves them. Each that cannot be
/// made or put is a warning, never a lost dump. The kernel is opened for
/// them alone and closed before the first page: its symbols, its modules'
/// and its BTF (most of 15 MiB) are not held through the dump. Returns the
/// dump's metadata.
fn put_diagnosis(
    store: &Store,
    name: &ObjectName,
    plan: &Plan<'_>,
    recipients: &Recipients,
) -> Vec<(&'static str, String)> {
    let host = host_name(plan);
    let meta = match KernelView::open(plan.input()) {
        Ok(Some(kernel)) => put_objects(store, name, plan, &kernel, &host, recipients),
        Ok(None) | Err(_) => {
            eprintln!("vmdump: warning: no kernel to read: no triage or kernel log is put beside {name}");
            metadata(&Triage::default(), &host, !recipients.is_empty())
        }
    };
    crate::resident::release_free_heap();
    meta
}

/// The triage and the kernel log of `kernel`, put beside `name`; the dump's metadata.
fn put_objects(
    store: &Store,
    name: &ObjectName,
    plan: &Plan<'_>,
    kernel: &KernelView<'_>,
    host: &str,
    recipients: &Recipients,
) -> Vec<(&'static str, String)> {
    let triage = Triage::read(kernel, plan.input().notes());
    let meta = metadata(&triage, host, !recipients.is_empty());
    let json = serde_json::to_string_pretty(&triage).map(|j| j + "\n").map_err(anyhow::Error::from);
    let log = crate::dmesg::kernel_log(kernel.memory(), kernel.info()).map_err(anyhow::Error::from);
    let objects = [
        (TRIAGE_SUFFIX, json.map(String::into_bytes), "application/json"),
        (DMESG_SUFFIX, log, "text/plain"),
    ];
    for (suffix, body, kind) in objects {
        let object = name.with_suffix(suffix);
        let put = body.and_then(|body| {
            let body = if recipients.is_empty() { body } else { recipients.encrypt(&body)? };
            let mut headers = meta.clone();
            headers.push(("content-type", kind.into()));
            Ok(put_object(store, &object, &body, headers)?)
        });
        if let Err(e) = put {
            eprintln!("vmdump: warning: {object} was not put: {e:#}");
        }
    }
    meta
}

/// Writes the dump of `plan` into object `name`: the diagnosis first, then
/// the dump (the kdump format whatever `-F` says: an object is read by
/// ranges, never as a stream). When the store fails and the profile names
/// a fallback directory, the dump goes there instead.
///
/// # Errors
/// The store's error (the upload is aborted), or the fallback's.
pub(super) fn write_dump(
    args: &DumpArgs,
    profile: &Profile,
    plan: &Plan<'_>,
    name: &ObjectName,
) -> anyhow::Result<DumpReport> {
    if args.elf || args.split.is_some() {
        anyhow::bail!("{name}: an object store takes the kdump format, not ELF output nor split pieces");
    }
    let recipients = profile.recipients()?;
    let (store, settings) = open_store(profile)?;
    let mut headers = put_diagnosis(&store, name, plan, &recipients);
    headers.push(("content-type", "application/octet-stream".into()));
    let mut sink = ObjectSink::new(store.clone(), name.clone(), settings.part_size, headers);
    let uploaded = upload(plan, &mut sink, &recipients)
        .with_context(|| format!("dump to {name} failed (the upload was aborted)"));
    let report = match (uploaded, &settings.fallback) {
        (Ok(report), _) => report,
        (Err(e), Some(dir)) => {
            drop(sink);
            eprintln!("vmdump: warning: {e:#}");
            return write_fallback(plan, profile, name, dir);
        }
        (Err(e), None) => return Err(e),
    };
    let traffic = store.traffic();
    Ok(report.with_store(name.to_string(), traffic))
}

/// The dump of `plan` into `object`: the kdump file, or with recipients
/// the age encryption of its flattened stream, as a file gets it.
fn upload(plan: &Plan<'_>, object: &mut ObjectSink, recipients: &Recipients) -> anyhow::Result<DumpReport> {
    if recipients.is_empty() {
        return Ok(dump(plan, object)?);
    }
    let size_hint = Arc::new(AtomicU64::new(0));
    let stream = ObjectStream::new(object, size_hint.clone());
    let mut encrypted = EncryptedSink::new(recipients, stream, None)?.with_size_hint(size_hint);
    let report = dump(plan, &mut encrypted)?;
    drop(encrypted);
    object.finish()?;
    Ok(report)
}

/// makedumpfile mode with `[output] target`: the dump goes to the object
/// the target's template names (`{host}`, `{release}`, `{time}` filled in
/// from the dump), and OUTPUT (the file a kdump script named, or stdout
/// with `-F`) gets a manifest naming it, so that the script sees a saved
/// dump and an operator finds it. When the store fails, the dump is
/// written to OUTPUT as if no target were set: nothing is lost.
///
/// # Errors
/// The target is no `s3://` URL, or the local dump's error.
pub(super) fn write_to_target(
    args: &DumpArgs,
    profile: &Profile,
    plan: &Plan<'_>,
    template: &str,
) -> anyhow::Result<DumpReport> {
    let release = plan.utsname().map(|u| String::from_utf8_lossy(u.get(2)).into_owned()).unwrap_or_default();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let key = template_key(template, &host_name(plan), &release, &crate::triage::time::utc_basic(now as i64));
    let name = ObjectName::parse(&key)
        .with_context(|| format!("[output] target = {template:?}: not s3://BUCKET/KEY"))?;
    let mut direct = profile.clone();
    direct.output.fallback = None;
    match write_dump(args, &direct, plan, &name) {
        Ok(report) => {
            write_manifest(args, &name, &report)?;
            Ok(report)
        }
        Err(e) => {
            eprintln!("vmdump: warning: {e:#}");
            eprintln!("vmdump: writing the dump to {} instead", args.output.display());
            super::dump::write_local(args, profile, plan)
        }
    }
}

/// The manifest of a dump that went to `name`: a few lines of `key = value`
/// a person reads and a script can parse.
fn write_manifest(args: &DumpArgs, name: &ObjectName, report: &DumpReport) -> anyhow::Result<()> {
    let state = if report.is_incomplete() { "incomplete" } else { "complete" };
    let text = format!(
        "# vmdump: this dump was written to an object store, not to this file.\n\
         # Copy it here with: vmdump fetch {name} FILE\n\
         object = {name}\n\
         triage = {}\n\
         kernel_log = {}\n\
         bytes_written = {}\n\
         pages = {}\n\
         state = {state}\n",
        name.with_suffix(TRIAGE_SUFFIX),
        name.with_suffix(DMESG_SUFFIX),
        report.bytes_written,
        report.pages_in_file,
    );
    if args.output == Path::new("-") {
        use std::io::Write;
        return std::io::stdout().lock().write_all(text.as_bytes()).context("writing the manifest to stdout");
    }
    super::dump::write_whole_file(&args.output, text.as_bytes(), &Recipients::none(), args.force)
        .with_context(|| format!("writing the manifest {}", args.output.display()))
}

/// The dump written to `dir` when the store failed: a file named after the
/// object's key (its `/` as `_`).
fn write_fallback(
    plan: &Plan<'_>,
    profile: &Profile,
    name: &ObjectName,
    dir: &Path,
) -> anyhow::Result<DumpReport> {
    let path: PathBuf = dir.join(name.key.replace('/', "_"));
    eprintln!("vmdump: writing the dump to the fallback {} instead", path.display());
    let file = super::dump::create_output(&path, false)?;
    let mut local = profile.clone();
    local.dump.format = OutputFormat::Kdump;
    let mut sink = super::dump::sink_for(Some(file), &local, None, true)?;
    dump(plan, sink.as_mut()).with_context(|| format!("dump to the fallback {} failed", path.display()))
}
