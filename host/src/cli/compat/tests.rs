use super::*;

fn args(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

fn dump_args(text: &str) -> DumpArgs {
    match parse(&args(text)).unwrap() {
        Request::Dump(d, _) => *d,
        other => panic!("{text}: {other:?}"),
    }
}

fn levels(text: &str) -> Vec<u8> {
    match parse(&args(text)).unwrap() {
        Request::Dump(_, levels) => levels.iter().map(|l| l.bits()).collect(),
        other => panic!("{text}: {other:?}"),
    }
}

fn error(text: &str) -> String {
    format!("{:#}", parse(&args(text)).unwrap_err())
}

#[test]
fn kdump_tools_and_kexec_tools_command_lines_parse() {
    let d = dump_args("-F -c -d 31 /proc/vmcore");
    assert_eq!(
        (d.compress.as_deref(), d.dump_level.map(DumpLevel::bits), d.output.to_str()),
        (Some("zlib:2"), Some(31), Some("-"))
    );
    let d = dump_args("-l --message-level 7 -d 31 /proc/vmcore /var/crash/dump");
    assert_eq!((d.compress.as_deref(), d.dump_level.map(DumpLevel::bits)), (Some("lzo"), Some(31)));
    let d = dump_args("-cd31 in out");
    assert_eq!((d.compress.as_deref(), d.dump_level.map(DumpLevel::bits)), (Some("zlib:2"), Some(31)));
    assert!(
        matches!(parse(&args("-R out")).unwrap(), Request::Rearrange(p, false) if p.to_str() == Some("out"))
    );
}

/// The forms the distributions' scripts build (notes of their sources: kdump-tools
/// 1.10.9 kdump-config, kdump-utils 1.0.61 kdump.sh, mkdumprd, kdumpctl).
#[test]
fn every_form_the_distributions_pass_parses() {
    // kdump-tools appends -F unless MAKEDUMP_ARGS starts with it: -F twice.
    for line in ["-F -c -d 31 /proc/vmcore", "-c -d 31 -F /proc/vmcore", "-F -c -d 31 -F /proc/vmcore"] {
        assert_eq!(dump_args(line).output.to_str(), Some("-"), "{line}");
    }
    // kdump-utils: -F removed or appended last, --num-threads=N appended for file targets.
    let d = dump_args("-l --message-level 7 -d 31 --num-threads=4 /proc/vmcore /mnt/vmcore-incomplete");
    assert_eq!((d.threads, d.message_level), (Some(4), Some(7)));
    assert_eq!(dump_args("-l --message-level 7 -d 31 /proc/vmcore -F").output.to_str(), Some("-"));
    assert_eq!(dump_args("-c --message-level 7 -d 31 /proc/vmcore out").compress.as_deref(), Some("zlib:2"));
    assert!(dump_args("-E -d 31 /proc/vmcore out").elf);
    assert!(matches!(
        parse(&args("--dump-dmesg /proc/vmcore /var/crash/dmesg")).unwrap(),
        Request::Dmesg(..)
    ));
}

#[test]
fn mkdumprds_check_params_line_is_checked_not_run() {
    // mkdumprd's verify_core_collector: `$_cmd --check-params $_params vmcore dumpfile`.
    for line in [
        "--check-params -l --message-level 7 -d 31 vmcore dumpfile",
        "--check-params -F -l --message-level 7 -d 31 vmcore",
        "--check-params -l --message-level 7 -d 31 -F vmcore",
        "--check-params -c --message-level 7 -d 31 vmcore dumpfile",
        "--check-params -F -c -d 31 -F vmcore",
        "--check-params -E -d 31 vmcore dumpfile",
        "--check-params -l -d 31,11 --message 7 vmcore dumpfile",
    ] {
        let request = parse(&args(line)).unwrap_or_else(|e| panic!("{line}: {e:#}"));
        assert!(matches!(request, Request::Check(ref r) if matches!(**r, Request::Dump(..))), "{line}");
    }
    for (line, why) in [
        ("--check-params -F -l -d 31 vmcore dumpfile", "usage"),
        ("--check-params -l -d 31 vmcore", "usage"),
        ("--check-params -c -E vmcore dumpfile", "-E"),
        ("--check-params -E --num-threads=4 vmcore dumpfile", "--num-threads"),
        ("--check-params --num-threads 4 --split vmcore a b", "--num-threads"),
        ("--check-params -F --split vmcore a b", "-F"),
        ("--check-params --message-level 32 -d 31 vmcore dumpfile", "out of range"),
        ("--check-params -d 32 vmcore dumpfile", "out of range"),
        ("--check-params --bogus vmcore dumpfile", "unknown option"),
        ("--check-params -x vmlinux -d 31 vmcore dumpfile", "vmlinux"),
    ] {
        let err = error(line);
        assert!(err.contains(why), "{line}: {err}");
    }
}

#[test]
fn every_honoured_option_sets_what_makedumpfile_means() {
    for (flag, codec) in [("-c", "zlib:2"), ("-l", "lzo"), ("-p", "snappy"), ("-z", "zstd:1")] {
        assert_eq!(dump_args(&format!("{flag} in out")).compress.as_deref(), Some(codec), "{flag}");
    }
    assert_eq!(
        dump_args("-c -l in out").compress.as_deref(),
        Some("lzo"),
        "the last compression option wins"
    );
    assert_eq!(dump_args("in out").compress.as_deref(), Some("none"), "no option: raw pages");
    assert_eq!(dump_args("in out").dump_level.map(DumpLevel::bits), Some(0), "makedumpfile's default level");
    assert_eq!(levels("-d 31,11,1 in out"), [31, 11, 1], "levels to retry");
    assert_eq!(dump_args("-d 31,11 in out").dump_level.map(DumpLevel::bits), Some(31));
    assert_eq!(dump_args("-F in").output.to_str(), Some("-"));
    assert!(dump_args("-f in out").force);
    assert_eq!(dump_args("-L 2G in out").limit, Some(2 << 30));
    assert_eq!(dump_args("--num-threads 3 in out").threads, Some(3));
    assert!(dump_args("--non-mmap in out").no_mmap);
    assert_eq!(dump_args("--splitblock-size 1024 --split in a b").splitblock_size, Some(1 << 20));
    assert!(matches!(parse(&args("-R out")).unwrap(), Request::Rearrange(_, false)));
    assert!(matches!(parse(&args("-f -R out")).unwrap(), Request::Rearrange(_, true)));
    assert!(matches!(parse(&args("--dump-dmesg in log")).unwrap(), Request::Dmesg(..)));
    assert!(matches!(parse(&args("--reassemble a b out")).unwrap(), Request::Reassemble(f) if f.len() == 3));
    assert!(matches!(parse(&args("-v")).unwrap(), Request::Version));
    assert!(matches!(parse(&args("-h")).unwrap(), Request::Help));
    assert!(matches!(parse(&args("--help")).unwrap(), Request::Help));
    assert_eq!(dump_args("in out").message_level, Some(7), "makedumpfile's default level");
    assert_eq!(dump_args("--message-level 22 -l in out").message_level, Some(22));
    assert_eq!(dump_args("--message-level 6 --show-stats in out").message_level, Some(22));
    assert_eq!(dump_args("-D in out").message_level, Some(31));
    assert!(dump_args("in out").salvage_vmcoreinfo, "a damaged VMCOREINFO never costs the dump");
}

#[test]
fn dump_dmesg_writes_a_new_logfile_or_with_f_to_stdout() {
    let dmesg = |text: &str| match parse(&args(text)) {
        Ok(Request::Dmesg(d)) => d,
        other => panic!("{text}: {other:?}"),
    };
    // SUSE's kdump-save: makedumpfile -F --message-level 8 --dump-dmesg /proc/vmcore > FIFO
    let suse = dmesg("-F --message-level 8 --dump-dmesg in");
    assert_eq!((suse.log, suse.message_level, suse.force), (None, 8, false));
    let file = dmesg("--dump-dmesg in log");
    assert_eq!((file.log.as_deref(), file.message_level), (Some(std::path::Path::new("log")), 7));
    assert!(dmesg("-f --dump-dmesg in log").force);
    for wrong in ["-F --dump-dmesg in log", "--dump-dmesg in", "-F --dump-dmesg"] {
        assert!(parse(&args(wrong)).is_err(), "{wrong}");
    }
}

#[test]
fn tuning_options_are_accepted_and_change_nothing() {
    let plain = dump_args("-l -d 31 in out");
    for line in
        ["-b 8 -l -d 31 in out", "--cyclic-buffer 1024 -l -d 31 in out", "--work-dir /tmp -l -d 31 in out"]
    {
        let d = dump_args(line);
        assert_eq!(
            (d.compress, d.dump_level, d.threads),
            (plain.compress.clone(), plain.dump_level, None),
            "{line}"
        );
    }
}

#[test]
fn every_refused_option_names_itself_and_the_reason() {
    for option in OPTIONS.iter().filter(|o| matches!(o.handling, Handling::Refused(_))) {
        let value = if option.value.is_some() { " x" } else { "" };
        let err = error(&format!("{}{value} in out", option.name));
        let Handling::Refused(why) = option.handling else { unreachable!() };
        assert!(err.contains(option.name) && err.contains(why), "{}: {err}", option.name);
    }
}

#[test]
fn rearranging_takes_one_file_and_none_of_the_dumps_options() {
    assert!(error("-R a b").contains("usage"));
    assert!(error("-R -c out").contains("-R rearranges"));
    assert!(error("-R -d 31 out").contains("-R rearranges"));
}

#[test]
fn a_profile_chooses_the_plugin_behind_each_compression_option() {
    let profile = Profile::parse("[makedumpfile]\nzlib = \"c-zlib:1\"\n", Path::new("p.toml")).unwrap();
    let Request::Dump(d, _) =
        parse_with(&args("-c -d 31 in out"), Some((Path::new("p.toml"), &profile))).unwrap()
    else {
        panic!()
    };
    assert_eq!(d.compress.as_deref(), Some("c-zlib:1"));
    assert_eq!(d.profile.as_deref(), Some(Path::new("p.toml")));
    let Request::Dump(d, _) = parse_with(&args("-l in out"), Some((Path::new("p.toml"), &profile))).unwrap()
    else {
        panic!()
    };
    assert_eq!(d.compress.as_deref(), Some("lzo"), "unset formats keep vmdump's choice");
}

#[test]
fn the_help_lists_every_option_taken() {
    let help = help_text();
    for option in OPTIONS {
        assert!(help.contains(option.name), "-h does not mention {}", option.name);
    }
}
