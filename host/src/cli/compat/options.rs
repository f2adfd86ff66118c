//! makedumpfile's options, one table: each honoured with makedumpfile's
//! meaning, accepted without effect (tuning vmdump does itself), or
//! refused with the reason, never ignored in silence. The man page's
//! MAKEDUMPFILE MODE table lists the same options (a test keeps them
//! together), and `-h` prints the honoured ones from here.
//!
//! The command line is split as GNU `getopt_long` does, which is what
//! makedumpfile uses and what the distributions' scripts rely on: options
//! anywhere among the files, `--opt=value` and `--opt value`, unambiguous
//! abbreviations of long options (`--message 7`), clustered short options
//! (`-cd31`), and `--` to end the options.

use anyhow::{bail, ensure};

/// What vmdump does with an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// Done as makedumpfile does it.
    Honoured,
    /// Accepted; it changes nothing in vmdump's output, for the reason given.
    NoEffect(&'static str),
    /// Refused, for the reason given.
    Refused(&'static str),
}

/// One option of makedumpfile 1.7.
#[derive(Debug)]
pub struct OptionSpec {
    /// `-c` or `--split`.
    pub name: &'static str,
    /// The name of its value, if it takes one.
    pub value: Option<&'static str>,
    /// What vmdump does with it.
    pub handling: Handling,
    /// What it means, in a few words.
    pub meaning: &'static str,
}

const fn honoured(name: &'static str, value: Option<&'static str>, meaning: &'static str) -> OptionSpec {
    OptionSpec { name, value, handling: Handling::Honoured, meaning }
}

const fn no_effect(name: &'static str, value: Option<&'static str>, why: &'static str) -> OptionSpec {
    OptionSpec { name, value, handling: Handling::NoEffect(why), meaning: why }
}

const fn refused(name: &'static str, value: Option<&'static str>, why: &'static str) -> OptionSpec {
    OptionSpec { name, value, handling: Handling::Refused(why), meaning: why }
}

const NEEDS_VMLINUX: &str =
    "needs a vmlinux or the first kernel; vmdump works from the VMCOREINFO note alone";
const XEN: &str = "Xen dumps are not supported";
const NO_CACHE: &str = "vmdump bounds its memory itself (pfn windows, a fixed number of page batches)";

/// Every option of makedumpfile 1.7 (its getopt string and long options).
pub const OPTIONS: &[OptionSpec] = &[
    honoured("-c", None, "compress each page with zlib"),
    honoured("-l", None, "compress each page with LZO"),
    honoured("-p", None, "compress each page with snappy"),
    honoured("-z", None, "compress each page with zstd"),
    honoured(
        "-d",
        Some("LEVEL[,LEVEL...]"),
        "exclude pages by type (0-31); later levels are retried if the dump does not fit (-L, full disk)",
    ),
    honoured("-L", Some("SIZE"), "stop the dump at SIZE bytes: an incomplete dump"),
    honoured("-E", None, "write an ELF core instead of the kdump-compressed format"),
    honoured("-f", None, "overwrite an existing DUMPFILE or LOGFILE"),
    honoured(
        "-F",
        None,
        "write the flattened format (with --dump-dmesg, the log) to stdout (may be repeated)",
    ),
    honoured("-R", None, "rearrange a flattened stream from stdin into DUMPFILE"),
    honoured("--split", None, "write the dump as several DUMPFILEs side by side"),
    honoured("--reassemble", None, "join the DUMPFILEs of --split into one"),
    honoured("--splitblock-size", Some("KIB"), "pieces of --split begin and end at multiples of this size"),
    honoured("--num-threads", Some("N"), "compress with N threads (the output is the same)"),
    honoured("--non-mmap", None, "read VMCORE with pread, never mmap"),
    honoured(
        "--message-level",
        Some("0-31"),
        "what to print: 1 progress, 2 common messages, 4 errors, 8 debug (VMCOREINFO on stderr), 16 the report",
    ),
    honoured("--show-stats", None, "print the report (message level bit 16)"),
    honoured("-D", None, "print every message"),
    honoured("--dump-dmesg", None, "write the kernel log of VMCORE to LOGFILE (with -F, to stdout)"),
    honoured(
        "--check-params",
        None,
        "check the command line only: write nothing, exit 0 if it is valid, else 1",
    ),
    honoured(
        "--dry-run",
        None,
        "write no DUMPFILE: the report with exact page counts, zero pages and write bytes estimated from a sample",
    ),
    honoured(
        "--mem-usage",
        None,
        "print the pages of VMCORE (the running system's /proc/kcore) by type, as -d 31 tells them apart; write nothing",
    ),
    honoured("-h", None, "print this help"),
    honoured("--help", None, "print this help"),
    honoured("-v", None, "print the version"),
    no_effect("-b", Some("ORDER"), "vmdump sizes its write cache itself"),
    no_effect("--cyclic-buffer", Some("KIB"), NO_CACHE),
    no_effect("--work-dir", Some("DIR"), "vmdump keeps no bitmap file: its memory is bounded without one"),
    refused("-x", Some("VMLINUX"), NEEDS_VMLINUX),
    refused("-i", Some("VMCOREINFO"), "vmdump reads the VMCOREINFO note of the vmcore itself"),
    refused("-g", Some("VMCOREINFO"), NEEDS_VMLINUX),
    refused("--config", Some("FILE"), NEEDS_VMLINUX),
    refused("--eppic", Some("FILE"), NEEDS_VMLINUX),
    refused("--vtop", Some("ADDRESS"), NEEDS_VMLINUX),
    refused(
        "--extension",
        Some("FILE"),
        "makedumpfile's extensions are not vmdump's plugins (vmdump plugins)",
    ),
    refused("-e", None, "excluding unused vmemmap is not implemented"),
    refused("--partial-dmesg", None, "not implemented: the whole log is written"),
    refused("--diskset", Some("VMCORE"), "sadump disksets are not supported"),
    refused("-X", None, XEN),
    refused("--xen-syms", Some("FILE"), XEN),
    refused("--xen-vmcoreinfo", Some("FILE"), XEN),
    refused("--xen_phys_start", Some("ADDRESS"), XEN),
];

/// One parsed word: an option of [`OPTIONS`] with its value, or a file.
#[derive(Debug, Clone)]
pub enum Token {
    /// An option and its value.
    Option(&'static OptionSpec, Option<String>),
    /// A file (VMCORE, DUMPFILE, LOGFILE...).
    File(String),
}

fn spec(name: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.name == name)
}

/// The long option `--word` names: itself, or the one option it abbreviates.
fn long_option(word: &str) -> anyhow::Result<&'static OptionSpec> {
    if let Some(exact) = spec(word) {
        return Ok(exact);
    }
    let matches: Vec<_> =
        OPTIONS.iter().filter(|o| o.name.starts_with("--") && o.name.starts_with(word)).collect();
    match matches.as_slice() {
        [one] => Ok(one),
        [] => bail!("unknown option {word}"),
        many => {
            let names: Vec<_> = many.iter().map(|o| o.name).collect();
            bail!("option {word} is ambiguous ({})", names.join(", "))
        }
    }
}

/// Splits a command line as `getopt_long` does.
///
/// # Errors
/// An unknown or ambiguous option, or one without its value.
pub fn tokens(args: &[String]) -> anyhow::Result<Vec<Token>> {
    let mut out = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            out.extend(rest.by_ref().map(|a| Token::File(a.clone())));
        } else if arg.starts_with("--") {
            let (word, attached) = match arg.split_once('=') {
                Some((w, v)) => (w, Some(v.to_owned())),
                None => (arg.as_str(), None),
            };
            let option = long_option(word)?;
            let value = match (option.value, attached) {
                (Some(_), Some(v)) => Some(v),
                (Some(what), None) => Some(next_value(&mut rest, option.name, what)?),
                (None, Some(_)) => bail!("option {} takes no value", option.name),
                (None, None) => None,
            };
            out.push(Token::Option(option, value));
        } else if arg.len() > 1 && arg.starts_with('-') {
            short_cluster(&arg[1..], &mut rest, &mut out)?;
        } else {
            out.push(Token::File(arg.clone()));
        }
    }
    Ok(out)
}

/// `-cd31`: flags, then one option whose value is the rest or the next word.
fn short_cluster<'a>(
    cluster: &str,
    rest: &mut impl Iterator<Item = &'a String>,
    out: &mut Vec<Token>,
) -> anyhow::Result<()> {
    for (i, c) in cluster.char_indices() {
        let name = format!("-{c}");
        let option = spec(&name).ok_or_else(|| anyhow::anyhow!("unknown option {name}"))?;
        let Some(what) = option.value else {
            out.push(Token::Option(option, None));
            continue;
        };
        let attached = &cluster[i + c.len_utf8()..];
        let value = match attached.is_empty() {
            true => next_value(rest, option.name, what)?,
            false => attached.to_owned(),
        };
        out.push(Token::Option(option, Some(value)));
        return Ok(());
    }
    Ok(())
}

fn next_value<'a>(
    rest: &mut impl Iterator<Item = &'a String>,
    name: &str,
    what: &str,
) -> anyhow::Result<String> {
    let value = rest.next().cloned();
    ensure!(value.is_some(), "{name} needs a value ({what})");
    Ok(value.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn names(text: &str) -> Vec<String> {
        tokens(&words(text))
            .unwrap()
            .into_iter()
            .map(|t| match t {
                Token::Option(o, Some(v)) => format!("{}={v}", o.name),
                Token::Option(o, None) => o.name.to_owned(),
                Token::File(f) => f,
            })
            .collect()
    }

    #[test]
    fn the_command_line_splits_as_getopt_long_splits_it() {
        assert_eq!(names("-cd31 in out"), ["-c", "-d=31", "in", "out"]);
        assert_eq!(names("-d 31 -l"), ["-d=31", "-l"]);
        assert_eq!(names("--message-level=7 --num-threads 4"), ["--message-level=7", "--num-threads=4"]);
        assert_eq!(names("--message 7 --num=2"), ["--message-level=7", "--num-threads=2"], "abbreviations");
        assert_eq!(names("in -F out -F"), ["in", "-F", "out", "-F"], "options among the files");
        assert_eq!(names("-l -- -odd out"), ["-l", "-odd", "out"], "-- ends the options");
        assert_eq!(names("-"), ["-"]);
    }

    #[test]
    fn unknown_ambiguous_and_valueless_options_are_errors() {
        let err = |text: &str| tokens(&words(text)).unwrap_err().to_string();
        assert!(err("--bogus in out").contains("unknown option --bogus"));
        assert!(err("-q in").contains("unknown option -q"));
        assert!(err("--xen in").contains("ambiguous"), "{}", err("--xen in"));
        assert!(err("-d").contains("-d needs a value"));
        assert!(err("--split=3").contains("takes no value"));
    }

    #[test]
    fn every_option_is_named_once() {
        for (i, option) in OPTIONS.iter().enumerate() {
            assert!(OPTIONS[i + 1..].iter().all(|o| o.name != option.name), "{} twice", option.name);
            assert!(option.name.starts_with("--") || option.name.len() == 2, "{}", option.name);
        }
    }
}
