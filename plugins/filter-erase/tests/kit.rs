//! The conformance kit on the erase filter, with a fake kernel holding a
//! task list, a string pointer and a key: the marks are exactly the bytes
//! the config names, found through the symbols, members and pointers.

use vmdump_filter_erase::vmdump_filter;
use vmdump_sdk::testing::{Erasure, FakeKernel, KernelMarks, PAGE_OFFSET, check_kernel_filter};
use vmdump_sdk::{Fill, Params};

const INIT_TASK: u64 = PAGE_OFFSET + 0x1000;
const SECOND_TASK: u64 = PAGE_OFFSET + 0x2000;
const CMDLINE: u64 = PAGE_OFFSET + 0x3000;
const CMDLINE_PTR: u64 = PAGE_OFFSET + 0x4000;
const KEY: u64 = PAGE_OFFSET + 0x5000;
const TASKS: u64 = 0x10;
const COMM: u64 = 0x40;

fn kernel() -> FakeKernel {
    let task = |k: FakeKernel, at: u64, next: u64, comm: &[u8]| {
        k.with_memory(at + TASKS, &next.to_le_bytes()).with_memory(at + COMM, comm)
    };
    let k = FakeKernel::new()
        .with_symbol("init_task", INIT_TASK, 0x100)
        .with_symbol("saved_command_line", CMDLINE_PTR, 8)
        .with_symbol("secret_key", KEY, 64)
        .with_type("struct task_struct", 0x100)
        .with_type("char *", 8)
        .with_member("struct task_struct", "comm", COMM, 16, "char [16]")
        .with_member("struct task_struct", "tasks", TASKS, 16, "struct list_head")
        .with_member("task_struct", "tasks", TASKS, 16, "struct list_head")
        .with_memory(CMDLINE, b"quiet secret=1\0")
        .with_memory(CMDLINE_PTR, &CMDLINE.to_le_bytes())
        .with_memory(KEY, &[7; 64]);
    let k = task(k, INIT_TASK, SECOND_TASK + TASKS, b"swapper/0\0");
    task(k, SECOND_TASK, INIT_TASK + TASKS, b"sshd\0")
}

const CONFIG: &str = "\
[vmlinux]
erase secret_key size 32
erase init_task.comm type struct task_struct
erase saved_command_line type char *
erase saved_command_line nullify type char *
for t in init_task.tasks within task_struct:tasks type struct task_struct
    erase t.comm
endfor
";

fn params(config: &str) -> (Params, std::path::PathBuf) {
    let path =
        std::env::temp_dir().join(format!("vmdump-erase-kit-{}-{}.conf", std::process::id(), config.len()));
    std::fs::write(&path, config).unwrap();
    (Params::new([("config", path.to_str().unwrap())]), path)
}

#[test]
fn the_erase_filter_marks_exactly_what_its_config_names() {
    let (params, path) = params(CONFIG);
    let x = Fill::Byte(b'X');
    let expected = KernelMarks {
        erasures: vec![
            Erasure::kvirt(KEY, 32, x, "secret_key"),
            Erasure::kvirt(INIT_TASK + COMM, 16, x, "init_task.comm"),
            Erasure::kvirt(CMDLINE, 14, x, "saved_command_line"),
            Erasure::kvirt(CMDLINE_PTR, 8, Fill::Nullify, "saved_command_line"),
            Erasure::kvirt(SECOND_TASK + COMM, 16, x, "t.comm"),
        ],
        ..KernelMarks::default()
    };
    let report = check_kernel_filter(vmdump_filter(), &params, &kernel(), &expected, &[]).unwrap();
    assert_eq!(report.marks.erasures.len(), 5);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_line_that_cannot_be_resolved_fails_the_hook_unless_skipped() {
    let (params, path) = params("erase no_such_symbol size 8\nerase secret_key size 4\n");
    let mut module =
        vmdump_filter().init(&params, std::sync::Arc::new(vmdump_sdk::client::StderrHost)).unwrap();
    let err = module.prepare(&kernel()).unwrap_err();
    assert!(err.message.contains("line 1: symbol `no_such_symbol`"), "{err}");
    let mut skipping = params.iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect::<Vec<_>>();
    skipping.push(("skip-missing".into(), "true".into()));
    let expected = KernelMarks {
        erasures: vec![Erasure::kvirt(KEY, 4, Fill::Byte(b'X'), "secret_key")],
        ..KernelMarks::default()
    };
    check_kernel_filter(vmdump_filter(), &Params::new(skipping), &kernel(), &expected, &[]).unwrap();
    std::fs::remove_file(path).unwrap();
}

#[test]
fn config_errors_are_refused_at_init_with_their_line() {
    let (params, path) = params("erase a\nfor x in b via next\nerase y.z\nendfor\n");
    let err =
        vmdump_filter().init(&params, std::sync::Arc::new(vmdump_sdk::client::StderrHost)).err().unwrap();
    assert!(err.message.contains("line 3"), "{err}");
    std::fs::remove_file(path).unwrap();
}
