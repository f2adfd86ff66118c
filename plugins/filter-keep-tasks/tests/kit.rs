//! The conformance kit on keep-tasks, with a fake kernel of four tasks:
//! the idle task, a kernel thread, and two processes, one with two threads
//! sharing its memory. The marks are exactly the named processes' pages.

use vmdump_filter_keep_tasks::vmdump_filter;
use vmdump_sdk::Params;
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

fn keeping(params: &[(&str, &str)], keep: Vec<std::ops::Range<u64>>) {
    let expected = KernelMarks { keep, ..KernelMarks::default() };
    let params = Params::new(params.iter().copied());
    let report = check_kernel_filter(vmdump_filter(), &params, &kernel(), &expected, &[]).unwrap();
    assert_eq!(report.name, "keep-tasks");
}

#[test]
fn a_process_named_by_comm_keeps_exactly_its_mapped_pages() {
    keeping(&[("comm", "sshd")], vec![0x100..0x102, 0x900..0x904]);
}

#[test]
fn processes_named_by_pid_and_comm_are_kept_together() {
    keeping(&[("pid", "977"), ("comm", "sshd")], vec![0x100..0x102, 0x900..0x904, 0x2000..0x2010]);
}

#[test]
fn kernel_threads_and_absent_names_keep_nothing_and_do_not_fail() {
    keeping(&[("pid", "2, 31337"), ("comm", "nginx")], vec![]);
}

#[test]
fn a_task_list_that_never_returns_to_its_head_fails_the_hook() {
    // postgres's next points at itself: the walk must not loop forever.
    let k = kernel().with_memory(POSTGRES + TASKS, &(POSTGRES + TASKS).to_le_bytes());
    let mut module = vmdump_filter()
        .init(&Params::new([("comm", "sshd")]), std::sync::Arc::new(vmdump_sdk::client::StderrHost))
        .unwrap();
    let err = module.prepare(&k).unwrap_err();
    assert!(err.message.contains("does not come back"), "{err}");
}

#[test]
fn parameters_that_name_no_process_are_refused() {
    let init = |params: &[(&str, &str)]| {
        vmdump_filter()
            .init(&Params::new(params.iter().copied()), std::sync::Arc::new(vmdump_sdk::client::StderrHost))
    };
    for bad in [&[][..], &[("pid", "sshd")], &[("comm", "")], &[("comm", "a-name-longer-than-15")]] {
        assert!(init(bad).is_err(), "{bad:?} was accepted");
    }
}
