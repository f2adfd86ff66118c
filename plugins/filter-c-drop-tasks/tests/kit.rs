//! The conformance kit on the C filter, loaded through the host's loader
//! as a dump loads it, with a fake kernel of four tasks: the idle task, a
//! kernel thread and two processes. The marks are exactly the named
//! processes' pages, to exclude.

use std::path::Path;
use std::sync::Arc;

use vmdump::plugin::load_filter;
use vmdump_filter_c_drop_tasks::SO_PATH;
use vmdump_sdk::Params;
use vmdump_sdk::client::{FilterPlugin, StderrHost};
use vmdump_sdk::testing::{FakeKernel, KernelMarks, PAGE_OFFSET, check_kernel_filter};

const TASKS: u64 = 0x10;
const TGID: u64 = 0x20;
const MM: u64 = 0x28;
const COMM: u64 = 0x40;
const PGD: u64 = 0x50;

const INIT_TASK: u64 = PAGE_OFFSET + 0x1000;
const KTHREAD: u64 = PAGE_OFFSET + 0x2000;
const SSHD: u64 = PAGE_OFFSET + 0x3000;
const POSTGRES: u64 = PAGE_OFFSET + 0x4000;
const SSHD_MM: u64 = PAGE_OFFSET + 0x5000;
const POSTGRES_MM: u64 = PAGE_OFFSET + 0x6000;
const SSHD_PGD: u64 = PAGE_OFFSET + 0x7000;
const POSTGRES_PGD: u64 = PAGE_OFFSET + 0x8000;

fn plugin() -> FilterPlugin {
    load_filter(Path::new(SO_PATH)).unwrap_or_else(|e| panic!("{e}")).plugin
}

fn kernel() -> FakeKernel {
    let task = |k: FakeKernel, at: u64, next: u64, tgid: u32, mm: u64, comm: &[u8]| {
        k.with_memory(at + TASKS, &(next + TASKS).to_le_bytes())
            .with_memory(at + TGID, &tgid.to_le_bytes())
            .with_memory(at + MM, &mm.to_le_bytes())
            .with_memory(at + COMM, comm)
    };
    let k = FakeKernel::new()
        .with_symbol("init_task", INIT_TASK, 0x100)
        .with_member("struct task_struct", "tasks", TASKS, 16, "struct list_head")
        .with_member("struct task_struct", "tgid", TGID, 4, "pid_t")
        .with_member("struct task_struct", "mm", MM, 8, "struct mm_struct *")
        .with_member("struct task_struct", "comm", COMM, 16, "char [16]")
        .with_member("struct mm_struct", "pgd", PGD, 8, "pgd_t *")
        .with_memory(SSHD_MM + PGD, &SSHD_PGD.to_le_bytes())
        .with_memory(POSTGRES_MM + PGD, &POSTGRES_PGD.to_le_bytes())
        .with_user_pages(SSHD_PGD, &[(0x40_0000, 0x900, 3), (0x40_3000, 0x903, 1), (0x7ff0_0000, 0x100, 2)])
        .with_user_pages(POSTGRES_PGD, &[(0x40_0000, 0x2000, 16)]);
    let k = task(k, INIT_TASK, KTHREAD, 0, 0, b"swapper/0\0");
    let k = task(k, KTHREAD, SSHD, 2, 0, b"kthreadd\0");
    let k = task(k, SSHD, POSTGRES, 412, SSHD_MM, b"sshd\0");
    task(k, POSTGRES, INIT_TASK, 977, POSTGRES_MM, b"postgres\0")
}

fn excluding(params: &[(&str, &str)], exclude: Vec<std::ops::Range<u64>>) {
    let expected = KernelMarks { exclude, ..KernelMarks::default() };
    let params = Params::new(params.iter().copied());
    let report = check_kernel_filter(plugin(), &params, &kernel(), &expected, &[]).unwrap();
    assert_eq!(report.name, "drop-tasks");
}

#[test]
fn it_is_an_abi_1_1_filter_that_decides_in_prepare_alone() {
    let info = plugin().info();
    assert_eq!((info.name.as_str(), info.abi), ("drop-tasks", (1, 1)));
    assert_eq!(info.needs, vmdump_sdk::Needs::KERNEL);
}

#[test]
fn a_process_named_by_comm_drops_exactly_its_mapped_pages() {
    excluding(&[("comm", "postgres")], vec![0x2000..0x2010]);
}

#[test]
fn processes_named_by_pid_and_comm_are_dropped_together() {
    excluding(
        &[("pid", "412"), ("comm", "postgres, nginx")],
        vec![0x100..0x102, 0x900..0x904, 0x2000..0x2010],
    );
}

#[test]
fn kernel_threads_and_absent_names_drop_nothing() {
    excluding(&[("pid", "2,31337")], vec![]);
}

#[test]
fn a_task_list_that_never_returns_to_its_head_fails_the_hook() {
    let k = kernel().with_memory(POSTGRES + TASKS, &(POSTGRES + TASKS).to_le_bytes());
    let mut module = plugin().init(&Params::new([("comm", "sshd")]), Arc::new(StderrHost)).unwrap();
    let err = module.prepare(&k).unwrap_err();
    assert!(err.message.contains("does not come back"), "{err}");
}

#[test]
fn parameters_that_name_no_process_are_refused_with_the_key() {
    for (bad, named) in [
        (&[][..], "`pid` or `comm`"),
        (&[("pid", "sshd")], "`pid`"),
        (&[("pid", "1,")], "`pid`"),
        (&[("comm", "a-name-longer-than-15")], "`comm`"),
        (&[("level", "1")], "`level`"),
    ] {
        let Err(err) = plugin().init(&Params::new(bad.iter().copied()), Arc::new(StderrHost)) else {
            panic!("{bad:?} was accepted")
        };
        assert!(err.to_string().contains(named), "{bad:?}: {err}");
    }
}
