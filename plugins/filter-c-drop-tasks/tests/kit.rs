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
use vmdump_sdk::testing::{FakeKernel, KernelMarks, check_kernel_filter, task_layout};

fn plugin() -> FilterPlugin {
    load_filter(Path::new(SO_PATH)).unwrap_or_else(|e| panic!("{e}")).plugin
}

/// The kit's sample task list: the idle task, kthreadd, sshd (412) and postgres (977).
fn kernel() -> FakeKernel {
    FakeKernel::new().with_sample_tasks()
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
    #[allow(clippy::single_range_in_vec_init)] // one range of pfns, not a Vec of 16 pfns
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
    let postgres = task_layout::task_address(3) + task_layout::TASKS;
    let k = kernel().with_memory(postgres, &postgres.to_le_bytes());
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
