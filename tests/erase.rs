//! The `erase` filter plugin (ABI 1.1) on the real vmcores of
//! `../shared/fixtures`: the shipped sample config plus a loop over the
//! task list. A judge that walks the task list itself in the ELF
//! (tests/py/erase_judge.py, libkdumpfile 0.5.4) finds every erased byte
//! to be the fill byte and every other byte of those pages as in the
//! vmcore, and reads the eraseinfo (`file.eraseinfo.raw`); `vmdump
//! convert` keeps both; an ELF dump records them in its ERASEINFO note,
//! which convert carries into a kdump file; drgn still opens the dump.

mod support;

use std::path::Path;
use std::process::Command;

use support::dumps::{Fixture, all_fixtures, drgn_python, libkdumpfile_with_eraseinfo, vmdump_ok};
use support::{build_dir, built_plugin, temp_dir, workspace_root};
use vmdump::input::Vmcore;
use vmdump::kernel::KernelView;

/// The loop the test adds to the sample: every task's comm.
const TASK_LOOP: &str = "\nfor t in init_task.tasks within task_struct:tasks type struct task_struct\n    \
                         erase t.comm\nendfor\nerase init_task.comm type struct task_struct\n";

/// What the judge needs, looked up in the fixture's kallsyms and BTF.
fn spec(fixture: &Fixture) -> String {
    let vmcore = Vmcore::open(&fixture.elf).unwrap();
    let kernel = KernelView::open(&vmcore).unwrap().unwrap();
    let (symbols, types) = (kernel.symbols().unwrap(), kernel.types().unwrap());
    let symbol = |name: &str| {
        let s = symbols.lookup(name).unwrap_or_else(|| panic!("{}: no {name}", fixture.name));
        format!("\"{name}\": [{}, {}]", s.address, s.size.unwrap_or(0))
    };
    let member = |path: &str| types.member("task_struct", path).unwrap().offset();
    format!(
        "{{\"fill\": 88, \"symbols\": {{{}, {}, {}}}, \"ranges\": [[\"base_crng\", 32], [\"input_pool\", 120]], \
         \"strings\": [\"saved_command_line\"], \"task_list\": {{\"init_task\": {}, \"tasks\": {}, \"comm\": {}, \
         \"comm_len\": 16}}}}",
        symbol("base_crng"),
        symbol("input_pool"),
        symbol("saved_command_line"),
        symbols.lookup("init_task").unwrap().address,
        member("tasks"),
        member("comm"),
    )
}

/// The judge's JSON line on `dump`; fails the test on any problem.
fn judge(dump: &Path, fixture: &Fixture, spec: &Path) -> String {
    let out = Command::new("/usr/bin/python3")
        .env("LD_LIBRARY_PATH", libkdumpfile_with_eraseinfo())
        .arg(workspace_root().join("tests/py/erase_judge.py"))
        .args([dump, &fixture.elf, spec])
        .output()
        .expect("run /usr/bin/python3");
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}: {line}{}", fixture.name, String::from_utf8_lossy(&out.stderr));
    line
}

/// The eraseinfo text of a judge's line.
fn eraseinfo(line: &str) -> &str {
    let at = line.find("\"eraseinfo\": \"").expect("eraseinfo in the judge's line") + 14;
    &line[at..at + line[at..].find('"').unwrap()]
}

#[test]
fn erased_bytes_read_back_as_the_fill_byte_with_eraseinfo_through_convert_and_drgn() {
    let Some(fixtures) = all_fixtures() else { return };
    let plugin = built_plugin("libvmdump_filter_erase.so");
    let dir = temp_dir("erase");
    let sample = std::fs::read_to_string(workspace_root().join("plugins/filter-erase/erase.conf")).unwrap();
    let config = dir.join("erase.conf");
    std::fs::write(&config, sample + TASK_LOOP).unwrap();
    let profile = dir.join("erase.toml");
    let toml = format!("[[filters]]\nname = \"erase\"\nparams = {{ config = \"{}\" }}\n", config.display());
    std::fs::write(&profile, toml).unwrap();
    let plugins = plugin.parent().unwrap();
    assert_eq!(plugins, build_dir());
    for fixture in &fixtures {
        let spec_file = dir.join(format!("{}.json", fixture.name));
        std::fs::write(&spec_file, spec(fixture)).unwrap();
        let dump = dir.join(format!("{}.erased", fixture.name));
        let report = vmdump_ok([
            "--plugin-dir".as_ref(),
            plugins.as_os_str(),
            "dump".as_ref(),
            "--profile".as_ref(),
            profile.as_os_str(),
            "-d".as_ref(),
            "31".as_ref(),
            fixture.elf.as_os_str(),
            dump.as_os_str(),
        ]);
        assert!(report.contains("Erased          : "), "{}: {report}", fixture.name);
        let line = judge(&dump, fixture, &spec_file);
        let lines = eraseinfo(&line);
        for expected in
            ["erase base_crng size 32\\n", "erase input_pool size 120\\n", "erase init_task.comm size 16\\n"]
        {
            assert!(lines.contains(expected), "{}: eraseinfo {lines}", fixture.name);
        }
        assert!(
            lines.contains("erase saved_command_line size ") && lines.contains("erase t.comm size "),
            "{lines}"
        );

        // convert (to lzo) keeps the erased bytes and the eraseinfo.
        let converted = dir.join(format!("{}.converted", fixture.name));
        vmdump_ok([
            "convert".as_ref(),
            "--compress".as_ref(),
            "lzo".as_ref(),
            dump.as_os_str(),
            converted.as_os_str(),
        ]);
        let again = judge(&converted, fixture, &spec_file);
        assert_eq!(eraseinfo(&again), lines, "{}: convert changed the eraseinfo", fixture.name);

        // As an ELF dump: the erasures recorded in its ERASEINFO note, which
        // convert carries into a kdump file's eraseinfo.
        let elf = dir.join(format!("{}.erased.elf", fixture.name));
        vmdump_ok([
            "--plugin-dir".as_ref(),
            plugins.as_os_str(),
            "dump".as_ref(),
            "--elf".as_ref(),
            "--profile".as_ref(),
            profile.as_os_str(),
            "-d".as_ref(),
            "31".as_ref(),
            fixture.elf.as_os_str(),
            elf.as_os_str(),
        ]);
        assert_eq!(
            eraseinfo(&judge(&elf, fixture, &spec_file)),
            lines,
            "{}: the ELF dump's ERASEINFO",
            fixture.name
        );
        let from_elf = dir.join(format!("{}.from-elf", fixture.name));
        vmdump_ok(["convert".as_ref(), elf.as_os_str(), from_elf.as_os_str()]);
        assert_eq!(
            eraseinfo(&judge(&from_elf, fixture, &spec_file)),
            lines,
            "{}: ELF to kdump",
            fixture.name
        );

        // drgn opens the erased dump and reads its kallsyms.
        let out = Command::new(drgn_python())
            .arg(workspace_root().join("tests/py/drgn_kallsyms.py"))
            .arg(&dump)
            .output()
            .unwrap();
        let symbols = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && symbols.contains(" init_task\n"),
            "{}: drgn: {}",
            fixture.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
