//! The conformance kit on keep-tasks, with the kit's sample task list: the
//! idle task, a kernel thread and two processes. The marks are exactly the
//! named processes' pages.

use vmdump_filter_keep_tasks::vmdump_filter;
use vmdump_sdk::Params;
use vmdump_sdk::testing::{FakeKernel, KernelMarks, check_kernel_filter, task_layout};

/// The kit's sample task list: the idle task, kthreadd, sshd (412) and postgres (977).
fn kernel() -> FakeKernel {
    FakeKernel::new().with_sample_tasks()
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
    let postgres = task_layout::task_address(3) + task_layout::TASKS;
    let k = kernel().with_memory(postgres, &postgres.to_le_bytes());
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
