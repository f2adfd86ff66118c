//! makedumpfile's command line (kdump-format.md §7.1), for scripts written
//! for it: `vmdump` started as `makedumpfile` (a symlink), or
//! `vmdump makedumpfile ARGS`. Every option is either honoured with
//! makedumpfile's meaning or refused with a message saying why, never
//! silently ignored. The profile (`VMDUMP_PROFILE`, else the system profile,
//! else the built-in one: [`ProfileSource`]) applies too, and its
//! `[makedumpfile]` section may choose the plugin that serves each
//! compression option (a vendor's accelerated zlib for `-c`).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};

use super::Outcome;
use super::dump::DumpArgs;
use crate::profile::{Profile, ProfileSource};

/// Options that need a vmlinux or debug information: vmdump works from
/// VMCOREINFO alone.
const NEED_VMLINUX: [&str; 8] =
    ["-x", "-i", "-g", "--config", "--eppic", "--vtop", "--mem-usage", "--extension"];
/// Options whose job vmdump does differently, with the reason.
const REFUSED: [(&str, &str); 6] = [
    ("-b", "vmdump sizes its write cache itself"),
    ("--cyclic-buffer", "vmdump bounds its memory itself (pfn windows), whatever the machine's size"),
    ("--work-dir", "vmdump keeps no bitmap file: its memory is bounded without one"),
    ("-e", "excluding unused vmemmap is not implemented"),
    ("--dry-run", "not implemented"),
    ("-X", "Xen dumps are not supported"),
];

/// What a makedumpfile command line asks for.
#[derive(Debug)]
pub enum Request {
    /// Write a dump.
    Dump(Box<DumpArgs>),
    /// `-R DUMPFILE`: rearrange a flattened stream from stdin.
    Rearrange(PathBuf),
    /// `--reassemble DUMPFILE1 DUMPFILE2 ... DUMPFILE`: the pieces, then the output.
    Reassemble(Vec<PathBuf>),
    /// `--dump-dmesg VMCORE LOGFILE`: the kernel log.
    Dmesg(PathBuf, PathBuf),
    /// `-v`.
    Version,
    /// `-h`.
    Help,
}

/// Options with a value.
fn takes_value(option: &str) -> bool {
    matches!(
        option,
        "-d" | "-L"
            | "-R"
            | "--num-threads"
            | "--message-level"
            | "--splitblock-size"
            | "-b"
            | "--cyclic-buffer"
            | "--work-dir"
    ) || NEED_VMLINUX[..3].contains(&option)
}

/// Splits arguments getopt-style: `-cd31` is `-c -d 31`, `--opt=v` is `--opt v`.
fn tokens(args: &[String]) -> anyhow::Result<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            let value = match value {
                None if takes_value(&name) => {
                    Some(rest.next().context(format!("{name} needs a value"))?.clone())
                }
                v => v,
            };
            out.push((name, value));
        } else if arg.len() > 1 && arg.starts_with('-') {
            let chars: Vec<char> = arg[1..].chars().collect();
            for (i, c) in chars.iter().enumerate() {
                let name = format!("-{c}");
                if takes_value(&name) {
                    let attached: String = chars[i + 1..].iter().collect();
                    let value = if attached.is_empty() {
                        rest.next().context(format!("{name} needs a value"))?.clone()
                    } else {
                        attached
                    };
                    out.push((name, Some(value)));
                    break;
                }
                out.push((name, None));
            }
        } else {
            out.push((String::new(), Some(arg.clone())));
        }
    }
    Ok(out)
}

/// Parses makedumpfile's arguments (without the program name), with the
/// compressor choices of `profile` for `-c -l -p -z`.
///
/// # Errors
/// An unknown or refused option, with the reason, or missing files.
pub fn parse_with(args: &[String], profile: Option<(&Path, &Profile)>) -> anyhow::Result<Request> {
    let chosen = |flag: &str, default: &str| {
        profile.and_then(|(_, p)| p.makedumpfile.for_option(flag)).unwrap_or(default).to_owned()
    };
    let mut dump = DumpArgs {
        profile: profile.map(|(path, _)| path.to_path_buf()),
        compress: Some("none".into()),
        dump_level: Some(0),
        message_level: Some(7),
        ..DumpArgs::default()
    };
    let (mut files, mut rearrange, mut flattened, mut dmesg) = (Vec::new(), None, false, false);
    let (mut split, mut reassemble) = (false, false);
    for (name, value) in tokens(args)? {
        match name.as_str() {
            "" => files.push(PathBuf::from(value.unwrap_or_default())),
            "-c" => dump.compress = Some(chosen("-c", "zlib:2")),
            "-l" => dump.compress = Some(chosen("-l", "lzo")),
            "-p" => dump.compress = Some(chosen("-p", "snappy")),
            "-z" => dump.compress = Some(chosen("-z", "zstd")),
            "-d" => dump.dump_level = Some(parse_level(&value.unwrap_or_default())?),
            "-F" => flattened = true,
            "-E" => dump.elf = true,
            "-f" => dump.force = true,
            "-R" => rearrange = value.map(PathBuf::from),
            "-L" => {
                dump.limit =
                    Some(super::synth::parse_size(&value.unwrap_or_default()).map_err(anyhow::Error::msg)?)
            }
            "--num-threads" => {
                dump.threads = Some(value.unwrap_or_default().parse().context("--num-threads")?)
            }
            "--non-mmap" => dump.no_mmap = true,
            "--dump-dmesg" => dmesg = true,
            "--split" => split = true,
            "--reassemble" => reassemble = true,
            "--splitblock-size" => {
                let kib: u64 = value.unwrap_or_default().parse().context("--splitblock-size (KiB)")?;
                dump.splitblock_size = Some(kib << 10);
            }
            "--message-level" => {
                dump.message_level = Some(value.unwrap_or_default().parse().context("--message-level")?)
            }
            "-D" => dump.message_level = Some(31), // debug: every message
            "-v" => return Ok(Request::Version),
            "-h" | "--help" => return Ok(Request::Help),
            other => refuse(other)?,
        }
    }
    if let Some(out) = rearrange {
        return Ok(Request::Rearrange(out));
    }
    if reassemble {
        if files.len() < 3 {
            bail!("usage: makedumpfile --reassemble DUMPFILE1 DUMPFILE2 [...] DUMPFILE");
        }
        return Ok(Request::Reassemble(files));
    }
    if split {
        let [input, outputs @ ..] = files.as_slice() else { bail!("--split needs a VMCORE") };
        ensure!(outputs.len() >= 2, "usage: makedumpfile --split VMCORE DUMPFILE1 DUMPFILE2 [...]");
        (dump.input, dump.output, dump.split_outputs) = (input.clone(), outputs[0].clone(), outputs.to_vec());
        dump.splitblock_size = dump.splitblock_size.or(Some(crate::dump::DEFAULT_SPLITBLOCK_BYTES));
        ensure!(!flattened, "--split cannot be combined with -F");
        return Ok(Request::Dump(Box::new(dump)));
    }
    if dmesg {
        let [input, log] = files.as_slice() else { bail!("usage: makedumpfile --dump-dmesg VMCORE LOGFILE") };
        return Ok(Request::Dmesg(input.clone(), log.clone()));
    }
    match (flattened, files.as_slice()) {
        (true, [input]) => (dump.input, dump.output) = (input.clone(), PathBuf::from("-")),
        (false, [input, output]) => (dump.input, dump.output) = (input.clone(), output.clone()),
        _ => {
            bail!("usage: makedumpfile [-c|-l|-p|-z] [-d LEVEL] [-F] VMCORE [DUMPFILE] (see makedumpfile -h)")
        }
    }
    Ok(Request::Dump(Box::new(dump)))
}

/// [`parse_with`] without a profile.
///
/// # Errors
/// As [`parse_with`].
pub fn parse(args: &[String]) -> anyhow::Result<Request> {
    parse_with(args, None)
}

/// makedumpfile accepts "-d 31" and a list of levels to retry ("-d 11,31");
/// vmdump takes the first.
fn parse_level(text: &str) -> anyhow::Result<u8> {
    let first = text.split(',').next().unwrap_or_default();
    first.trim().parse().with_context(|| format!("-d {text}: not a dump level"))
}

fn refuse(option: &str) -> anyhow::Result<()> {
    if NEED_VMLINUX.contains(&option) {
        bail!("{option} needs a vmlinux or debug information; vmdump works from VMCOREINFO alone");
    }
    match REFUSED.iter().find(|(name, _)| *name == option) {
        Some((_, why)) => bail!("{option} is not supported by vmdump: {why}"),
        None => bail!("unknown option {option}"),
    }
}

/// Runs a makedumpfile command line.
///
/// # Errors
/// As `vmdump dump`, or a refused option.
pub fn run(args: &[String], plugin_dirs: &[PathBuf]) -> anyhow::Result<Outcome> {
    let source = ProfileSource::of_process(None);
    let profile = source.load()?;
    let path = source.path().unwrap_or(Path::new(crate::profile::BUILTIN));
    match parse_with(args, Some((path, &profile)))? {
        // A kdump-compressed input is refiltered (makedumpfile -d on a dump file).
        Request::Dump(dump) => {
            super::convert::run(&super::convert::ConvertArgs { pieces: Vec::new(), dump: *dump }, plugin_dirs)
        }
        Request::Rearrange(out) => {
            let mut file =
                std::fs::File::create(&out).with_context(|| format!("cannot create {}", out.display()))?;
            let mut input = std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock());
            vmdump_format::flat::rearrange(&mut input, &mut file)
                .context("rearranging the flattened stream")?;
            Ok(Outcome::Success)
        }
        Request::Reassemble(files) => {
            super::reassemble::run(&super::reassemble::ReassembleArgs { force: false, files })
        }
        Request::Dmesg(input, log) => {
            let text = super::dmesg::kernel_log(&input, &[], plugin_dirs)?;
            std::fs::write(&log, text).with_context(|| format!("writing {}", log.display()))?;
            Ok(Outcome::Success)
        }
        Request::Version => {
            println!(
                "makedumpfile: vmdump {} (makedumpfile-compatible command line)",
                env!("CARGO_PKG_VERSION")
            );
            Ok(Outcome::Success)
        }
        Request::Help => {
            println!(
                "usage: makedumpfile [-c|-l|-p|-z] [-d LEVEL] [-F] [-f] [-L SIZE] [--num-threads N] VMCORE [DUMPFILE]"
            );
            println!("       makedumpfile -R DUMPFILE < FLATTENED");
            println!("vmdump's makedumpfile mode: the options above, with makedumpfile's meaning.");
            Ok(Outcome::Success)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn kdump_tools_and_kexec_tools_command_lines_parse() {
        let Request::Dump(d) = parse(&args("-F -c -d 31 /proc/vmcore")).unwrap() else { panic!() };
        assert_eq!(
            (d.compress.as_deref(), d.dump_level, d.output.to_str()),
            (Some("zlib:2"), Some(31), Some("-"))
        );
        let Request::Dump(d) =
            parse(&args("-l --message-level 7 -d 31 /proc/vmcore /var/crash/dump")).unwrap()
        else {
            panic!()
        };
        assert_eq!((d.compress.as_deref(), d.dump_level), (Some("lzo"), Some(31)));
        let Request::Dump(d) = parse(&args("-cd31 in out")).unwrap() else { panic!() };
        assert_eq!((d.compress.as_deref(), d.dump_level), (Some("zlib:2"), Some(31)));
        assert!(
            matches!(parse(&args("-R out")).unwrap(), Request::Rearrange(p) if p.to_str() == Some("out"))
        );
    }

    fn dump_args(text: &str) -> DumpArgs {
        match parse(&args(text)).unwrap() {
            Request::Dump(d) => *d,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn every_honoured_option_sets_what_makedumpfile_means() {
        for (flag, codec) in [("-c", "zlib:2"), ("-l", "lzo"), ("-p", "snappy"), ("-z", "zstd")] {
            assert_eq!(dump_args(&format!("{flag} in out")).compress.as_deref(), Some(codec), "{flag}");
        }
        assert_eq!(dump_args("in out").compress.as_deref(), Some("none"), "no option: raw pages");
        assert_eq!(dump_args("in out").dump_level, Some(0), "makedumpfile's default level");
        assert_eq!(dump_args("-d 11,31 in out").dump_level, Some(11), "the first of a retry list");
        assert_eq!(dump_args("-F in").output.to_str(), Some("-"));
        assert!(dump_args("-f in out").force);
        assert_eq!(dump_args("-L 2G in out").limit, Some(2 << 30));
        assert_eq!(dump_args("--num-threads 3 in out").threads, Some(3));
        assert!(dump_args("--non-mmap in out").no_mmap);
        assert!(matches!(parse(&args("-R out")).unwrap(), Request::Rearrange(_)));
        assert!(matches!(parse(&args("--dump-dmesg in log")).unwrap(), Request::Dmesg(..)));
        assert!(matches!(parse(&args("-v")).unwrap(), Request::Version));
        assert!(matches!(parse(&args("-h")).unwrap(), Request::Help));
        assert_eq!(dump_args("in out").message_level, Some(7), "makedumpfile's default level");
        assert_eq!(dump_args("--message-level 22 -l in out").message_level, Some(22));
        assert_eq!(dump_args("-D in out").message_level, Some(31));
    }

    #[test]
    fn every_refused_option_names_itself_and_the_reason() {
        for (option, _) in REFUSED {
            let value = if takes_value(option) { " 1" } else { "" };
            let err = parse(&args(&format!("{option}{value} in out"))).unwrap_err().to_string();
            assert!(err.contains(option) && err.contains("not supported"), "{option}: {err}");
        }
        for option in NEED_VMLINUX {
            let value = if takes_value(option) { " x" } else { "" };
            let err = parse(&args(&format!("{option}{value} in out"))).unwrap_err().to_string();
            assert!(err.contains("vmlinux"), "{option}: {err}");
        }
    }

    #[test]
    fn a_profile_chooses_the_plugin_behind_each_compression_option() {
        let profile = Profile::parse("[makedumpfile]\nzlib = \"c-zlib:1\"\n", Path::new("p.toml")).unwrap();
        let parsed = parse_with(&args("-c -d 31 in out"), Some((Path::new("p.toml"), &profile))).unwrap();
        let Request::Dump(d) = parsed else { panic!() };
        assert_eq!(d.compress.as_deref(), Some("c-zlib:1"));
        assert_eq!(d.profile.as_deref(), Some(Path::new("p.toml")));
        let Request::Dump(d) = parse_with(&args("-l in out"), Some((Path::new("p.toml"), &profile))).unwrap()
        else {
            panic!()
        };
        assert_eq!(d.compress.as_deref(), Some("lzo"), "unset formats keep vmdump's choice");
    }

    #[test]
    fn refused_options_say_why() {
        let err = parse(&args("-x vmlinux -d 31 in out")).unwrap_err().to_string();
        assert!(err.contains("vmlinux"), "{err}");
        let err = parse(&args("--cyclic-buffer 1024 in out")).unwrap_err().to_string();
        assert!(err.contains("bounds its memory"), "{err}");
        assert!(parse(&args("--bogus in out")).unwrap_err().to_string().contains("unknown option"));
    }
}
