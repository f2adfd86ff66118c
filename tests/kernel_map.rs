//! The dumped kernel's own map, read from the real vmcores of
//! `../shared/fixtures` (Debian 12's 6.1, as QEMU and /proc/vmcore wrote
//! it, and Debian unstable's 7.2, whose kallsyms offsets are
//! place-relative): every kallsyms symbol equals what drgn's
//! `load_vmlinux_kallsyms` reads from the same dump; every `OFFSET()`,
//! `SIZE()` and `LENGTH()` that VMCOREINFO gives, and the enumerators its
//! `NUMBER()`s are, equal what the BTF read from the dump says.

mod support;

use std::process::Command;

use support::dumps::{Fixture, all_fixtures, drgn_python, edited_vmcoreinfo, vmdump, vmdump_ok};
use support::workspace_root;
use vmdump::input::{Input, Vmcore};
use vmdump::kernel::KernelView;
use vmdump::kernel::kallsyms::AddressEncoding;

/// Runs `check` on the kernel of each fixture.
fn for_each_kernel(check: impl Fn(&Fixture, &KernelView<'_>)) {
    let Some(fixtures) = all_fixtures() else { return };
    for f in &fixtures {
        let vmcore = Vmcore::open(&f.elf).unwrap();
        let kernel = KernelView::open(&vmcore).unwrap().unwrap();
        check(f, &kernel);
    }
}

/// drgn's symbols of `dump`: address, binding, kind, name.
fn drgn_symbols(dump: &std::path::Path) -> String {
    let out = Command::new(drgn_python())
        .arg(workspace_root().join("tests/py/drgn_kallsyms.py"))
        .arg(dump)
        .output()
        .expect("run drgn's python");
    assert!(
        out.status.success(),
        "drgn cannot read kallsyms of {}: {}",
        dump.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The binding and kind drgn gives a symbol of `nm` type `kind` (nm(1):
/// upper case global, `u` unique, `v`/`w` weak; text is a function; bss,
/// common, data, small data, read-only data and weak objects are objects).
fn drgn_view(kind: char) -> (&'static str, &'static str) {
    let lower = kind.to_ascii_lowercase();
    let binding = match kind {
        'u' => "UNIQUE",
        _ if lower == 'v' || lower == 'w' => "WEAK",
        _ if kind.is_ascii_uppercase() => "GLOBAL",
        _ => "UNKNOWN",
    };
    let object = match lower {
        'b' | 'c' | 'd' | 'g' | 'r' | 'v' => "OBJECT",
        't' => "FUNC",
        _ => "UNKNOWN",
    };
    (binding, object)
}

#[test]
fn every_symbol_equals_drgns() {
    let Some(fixtures) = all_fixtures() else { return };
    for f in &fixtures {
        let out = vmdump(["symbols".as_ref(), f.elf.as_os_str()]);
        assert!(out.status.success(), "{}: {}", f.name, String::from_utf8_lossy(&out.stderr));
        let ours = String::from_utf8(out.stdout).unwrap();
        let theirs = drgn_symbols(&f.elf);
        // vmlinux's lines (modules' end in a tab and [module], which drgn
        // cannot read without the kernel's debug info).
        let ours: Vec<&str> = ours.lines().filter(|l| !l.contains("\t[")).collect();
        let theirs: Vec<&str> = theirs.lines().collect();
        assert_eq!(ours.len(), theirs.len(), "{}: symbols", f.name);
        assert!(ours.len() > 50_000, "{}: {} symbols", f.name, ours.len());
        for (line, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            let o: Vec<&str> = o.splitn(3, ' ').collect();
            let t: Vec<&str> = t.splitn(4, ' ').collect();
            let kind = o[1].chars().next().unwrap();
            let (binding, object) = drgn_view(kind);
            assert_eq!(
                (o[0], binding, object, o[2]),
                (t[0], t[1], t[2], t[3]),
                "{}: symbol {line} (nm type {kind})",
                f.name
            );
        }
        eprintln!("{}: {} symbols equal drgn's", f.name, ours.len());
    }
}

#[test]
fn addresses_are_read_the_way_each_kernel_writes_them() {
    for_each_kernel(|f, kernel| {
        let symbols = kernel.symbols().unwrap();
        let expected = match f.name {
            // x86_64 SMP before 6.15: per-CPU symbols at their offsets
            "vmcore-S" | "vmcore-SK" => AddressEncoding::AbsolutePercpu,
            _ => AddressEncoding::PlaceRelative,
        };
        assert_eq!(symbols.encoding(), expected, "{}", f.name);
        // Every symbol VMCOREINFO names is where kallsyms has it, but
        // kallsyms' own tables, which it does not list, macros
        // (node_online_map is node_states[N_ONLINE], x86_64's swapper_pg_dir
        // init_top_pgt, 7.x's vmemmap the value of vmemmap_base) and pointers whose value it gives (mem_section, with
        // SPARSEMEM_EXTREME: where the root array is).
        let (mut macros, mut pointers) = (Vec::new(), Vec::new());
        for (key, value) in kernel.info().entries() {
            let Some(name) = key.strip_prefix("SYMBOL(").and_then(|k| k.strip_suffix(')')) else { continue };
            let address = u64::from_str_radix(value, 16).unwrap();
            let found: Vec<u64> = symbols.named(name).map(|s| s.address).collect();
            if found.is_empty() {
                macros.push(name);
            } else if !found.contains(&address) {
                let pointer = kernel.memory().read_u64(found[0]).unwrap();
                assert_eq!(pointer, address, "{}: SYMBOL({name})={value}, kallsyms has {found:x?}", f.name);
                pointers.push(name);
            }
        }
        macros.retain(|name| {
            !name.starts_with("kallsyms_") && !["node_online_map", "swapper_pg_dir", "vmemmap"].contains(name)
        });
        assert_eq!(macros, [""; 0], "{}: VMCOREINFO symbols kallsyms lacks", f.name);
        assert_eq!(pointers, ["mem_section"], "{}: VMCOREINFO symbols that are a pointer's value", f.name);
        let crash = symbols.lookup("sysrq_handle_crash").unwrap();
        let (inside, offset) = symbols.containing(crash.address + 3).unwrap();
        assert_eq!((inside.name, offset), ("sysrq_handle_crash", 3), "{}", f.name);
    });
}

#[test]
fn btf_agrees_with_every_vmcoreinfo_offset_size_and_length() {
    for_each_kernel(|f, kernel| {
        let types = kernel.types().unwrap();
        let btf = types.vmlinux();
        let (mut offsets, mut sizes, mut lengths) = (0, 0, 0);
        for (key, value) in kernel.info().entries() {
            let number = || value.parse::<u64>().unwrap();
            let inner = |prefix: &str| key.strip_prefix(prefix).and_then(|k| k.strip_suffix(')'));
            if let Some(name) = inner("OFFSET(") {
                let (outer, path) = name.split_once('.').unwrap();
                let member = types.member(outer, path).unwrap_or_else(|e| panic!("{}: {key}: {e}", f.name));
                assert_eq!(member.offset(), number(), "{}: {key}", f.name);
                offsets += 1;
            } else if let Some(name) = inner("SIZE(") {
                // SIZE(x) is sizeof(struct x), or of the typedef x.
                assert_eq!(
                    types.size_of(name).unwrap_or_else(|e| panic!("{}: {key}: {e}", f.name)),
                    number(),
                    "{}: {key}",
                    f.name
                );
                sizes += 1;
            } else if let Some(name) = inner("LENGTH(") {
                let Some((outer, path)) = name.split_once('.') else { continue }; // LENGTH(mem_section) is a config
                let member = types.member(outer, path).unwrap();
                let total = btf.size_of(member.type_id).unwrap();
                let element = btf.type_name(member.type_id);
                assert!(
                    element.ends_with(&format!("[{}]", number())),
                    "{}: {key}: {element} ({total} bytes)",
                    f.name
                );
                lengths += 1;
            }
        }
        assert!(offsets > 30 && sizes > 10, "{}: {offsets} offsets, {sizes} sizes", f.name);
        // The page flags and zone counters VMCOREINFO gives by number.
        for name in ["PG_lru", "PG_private", "PG_swapcache", "PG_head", "PG_slab", "NR_FREE_PAGES"] {
            let Some(number) = kernel.info().number(name) else { continue };
            assert_eq!(types.enumerator(name).unwrap(), number, "{}: NUMBER({name})", f.name);
        }
        // The bytes are the kernel's own BTF.
        assert_eq!(types.address(), kernel.symbols().unwrap().address_of("__start_BTF").unwrap());
        eprintln!(
            "{}: {offsets} offsets, {sizes} sizes, {lengths} lengths equal BTF's ({} types)",
            f.name,
            btf.len()
        );
    });
}

/// Each module found by walking the list `modules` with BTF's layout of
/// `struct module` is where its own symbol table puts `__this_module`
/// (the struct module of every module); its BTF, read from the kernel's
/// copy, parses split on the kernel's and names types of both.
#[test]
fn every_module_is_where_its_own_symbols_say() {
    for_each_kernel(|f, kernel| {
        let modules = kernel.modules().unwrap();
        let names: Vec<&str> = modules.iter().map(|m| m.name.as_str()).collect();
        assert!(names.contains(&"ext4") && names.contains(&"jbd2"), "{}: modules {names:?}", f.name);
        for module in modules.iter() {
            let this: Vec<u64> =
                module.symbols().filter(|s| s.name == "__this_module").map(|s| s.address).collect();
            assert_eq!(this, [module.address()], "{}: {}'s __this_module", f.name, module.name);
        }
        let types = kernel.types().unwrap();
        let ext4 = types.read_module(kernel.memory(), modules.get("ext4").unwrap()).unwrap();
        let sb_info = ext4.aggregate("ext4_sb_info").expect("ext4's own struct");
        let s_sb = ext4.member(sb_info, "s_sb").expect("ext4_sb_info.s_sb");
        assert_eq!(
            ext4.type_name(s_sb.type_id),
            "struct super_block *",
            "{}: a type of the kernel's BTF",
            f.name
        );
        eprintln!(
            "{}: {} modules, {} symbols",
            f.name,
            names.len(),
            modules.iter().map(|m| m.symbols().count()).sum::<usize>()
        );
    });
}

/// The classification's counts beside the kernel's own counters on every
/// real vmcore: they agree (the report says so), within the bound the
/// per-CPU deltas allow; the figures are printed.
#[test]
fn the_self_check_agrees_on_every_real_vmcore() {
    let Some(fixtures) = all_fixtures() else { return };
    let dir = support::temp_dir("self-check");
    for f in &fixtures {
        let out = dir.join(format!("{}.kdump", f.name));
        let report = vmdump_ok([
            "dump".as_ref(),
            "--no-progress".as_ref(),
            "-d".as_ref(),
            "31".as_ref(),
            f.elf.as_os_str(),
            out.as_os_str(),
        ]);
        let line = report
            .lines()
            .find(|l| l.starts_with("Self-check"))
            .unwrap_or_else(|| panic!("{}: {report}", f.name));
        assert!(line.contains(": agree (within"), "{}: {line}", f.name);
        assert!(!report.contains("warning"), "{}: {report}", f.name);
        for counter in ["NR_FREE_PAGES", "NR_FILE_PAGES", "NR_ANON_MAPPED"] {
            assert!(line.contains(counter), "{}: {line}", f.name);
        }
        eprintln!("{}: {line}", f.name);
    }
}

/// The self-check warns when the classification is broken: vmcore-SK with
/// its buddy page type changed in VMCOREINFO (-129 to -130) finds no free
/// pages, while the kernel counts 44,327; the warning names the class
/// and the counter, the report says they differ, and the dump is written.
#[test]
fn the_self_check_warns_when_the_classification_is_broken_on_purpose() {
    let Some(fixtures) = all_fixtures() else { return };
    let f = fixtures.iter().find(|f| f.name == "vmcore-SK").unwrap();
    let dir = support::temp_dir("self-check-broken");
    let vmcore = edited_vmcoreinfo(
        f,
        &dir,
        b"NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)=-129",
        b"NUMBER(PAGE_BUDDY_MAPCOUNT_VALUE)=-130",
    );
    let out = dir.join("broken.kdump");
    let report = vmdump_ok([
        "dump".as_ref(),
        "--no-progress".as_ref(),
        "-d".as_ref(),
        "31".as_ref(),
        vmcore.as_os_str(),
        out.as_os_str(),
    ]);
    let warning = report
        .lines()
        .find(|l| l.starts_with("vmdump: warning: the classification"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        warning.contains("left out 0 pages as free pages, the kernel's own NR_FREE_PAGES counts 44327"),
        "{warning}"
    );
    assert!(report.lines().any(|l| l.starts_with("Self-check") && l.contains("DIFFER")), "{report}");
    assert_eq!(
        report.matches("vmdump: warning: the classification").count(),
        1,
        "only free pages are off: {report}"
    );
}

/// Pages of the kernel image in use are kept whatever their struct pages
/// say: in a copy of vmcore-SK, 16 pages of bss and 16 freed init pages
/// get PG_lru (as 6.6's bss did, makedumpfile issue #21), which makes
/// them page cache to the classification. At -d 31 the bss pages are in
/// the dump and counted as kept; the init pages, which the kernel freed,
/// are left out.
#[test]
fn kernel_image_pages_in_use_are_kept_even_with_pg_lru() {
    use std::os::unix::fs::FileExt;
    let Some(fixtures) = all_fixtures() else { return };
    let f = fixtures.iter().find(|f| f.name == "vmcore-SK").unwrap();
    let dir = support::temp_dir("image-pages");
    let copy = dir.join("vmcore-SK-lru");
    std::fs::copy(&f.elf, &copy).unwrap();
    let (bss, init) = {
        let vmcore = Vmcore::open(&copy).unwrap();
        let kernel = KernelView::open(&vmcore).unwrap().unwrap();
        let symbols = kernel.symbols().unwrap();
        let memory = kernel.memory();
        let pfn_of = |name: &str, page: u64| {
            memory.translate(symbols.address_of(name).unwrap() + page * 4096).unwrap() / 4096
        };
        let bss: Vec<u64> = (0..16).map(|i| pfn_of("__bss_start", i)).collect();
        let init: Vec<u64> = (0..16).map(|i| pfn_of("__init_begin", i)).collect();
        // Set PG_lru in each one's struct page, in the file.
        let lru = 1u64 << kernel.info().number("PG_lru").unwrap();
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&copy).unwrap();
        for &pfn in bss.iter().chain(&init) {
            let struct_page = kernel.sections().unwrap().mem_map_of(pfn).unwrap();
            let paddr = memory.translate(struct_page).unwrap() + kernel.info().offset("page.flags").unwrap();
            let at = vmcore.phys().locate(paddr / 4096).unwrap().file_offset + paddr % 4096;
            let mut flags = [0u8; 8];
            file.read_exact_at(&mut flags, at).unwrap();
            file.write_all_at(&(u64::from_le_bytes(flags) | lru).to_le_bytes(), at).unwrap();
        }
        (bss, init)
    };
    let out = dir.join("lru.kdump");
    let report = vmdump_ok([
        "dump".as_ref(),
        "--no-progress".as_ref(),
        "-d".as_ref(),
        "31".as_ref(),
        copy.as_os_str(),
        out.as_os_str(),
    ]);
    let kept = report.lines().find(|l| l.starts_with("Kernel image")).unwrap_or_else(|| panic!("{report}"));
    assert!(kept.contains(": 16 pages in use kept"), "{kept}");
    let reader = vmdump_format::kdump::KdumpReader::open(std::fs::File::open(&out).unwrap()).unwrap();
    for pfn in bss {
        assert!(reader.is_dumpable(pfn).unwrap(), "bss pfn {pfn:#x} is in the dump");
    }
    for pfn in init {
        assert!(!reader.is_dumpable(pfn).unwrap(), "freed init pfn {pfn:#x} is left out as page cache");
    }
}
