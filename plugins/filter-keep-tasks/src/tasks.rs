//! The dumped kernel's processes: its task list, walked from `init_task`
//! through `task_struct.tasks` (one entry per thread group leader), with
//! the offsets taken from the dump's BTF.

use std::collections::HashSet;

use vmdump_sdk::{Kernel, KernelError, SdkError, Space};

/// More tasks than any kernel holds (PID_MAX_LIMIT): a longer list is a
/// corrupt one, walked in a loop.
const MAX_TASKS: usize = 1 << 22;

/// Bytes of `task_struct.comm` (TASK_COMM_LEN) at most.
const COMM_MAX: usize = 64;

/// One process as its leader's `task_struct` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    /// Its thread group id (the pid `ps` shows).
    pub tgid: u32,
    /// Its `comm`, up to the NUL.
    pub comm: String,
    /// Its `mm_struct`'s address; 0 for a kernel thread.
    pub mm: u64,
}

/// Where the walk finds what it reads.
struct Layout {
    tasks: u64,
    tgid: (u64, u64),
    comm: (u64, u64),
    mm: u64,
}

impl Layout {
    fn of(kernel: &Kernel<'_>) -> Result<Self, KernelError> {
        let member = |name: &str| kernel.member("struct task_struct", name);
        let (tgid, comm) = (member("tgid")?, member("comm")?);
        Ok(Self {
            tasks: member("tasks")?.offset,
            tgid: (tgid.offset, tgid.size),
            comm: (comm.offset, comm.size.min(COMM_MAX as u64)),
            mm: member("mm")?.offset,
        })
    }
}

/// Every process on the kernel's task list, `init_task` (pid 0) first.
///
/// # Errors
/// No `init_task` or BTF, an unreadable task, or a list that does not come
/// back to its head.
pub fn processes(kernel: &Kernel<'_>) -> Result<Vec<Process>, SdkError> {
    let layout = Layout::of(kernel)?;
    let head = kernel.symbol("init_task")?.address + layout.tasks;
    let (mut found, mut seen) = (Vec::new(), HashSet::new());
    let mut entry = head;
    loop {
        let task = entry - layout.tasks;
        found.push(read_process(kernel, &layout, task)?);
        entry = kernel.read_u64(entry)?;
        if entry == head {
            return Ok(found);
        }
        if !seen.insert(entry) || found.len() == MAX_TASKS || entry < layout.tasks {
            return Err(SdkError::failed(format!(
                "the task list from init_task does not come back to it (at {entry:#x} after {} tasks)",
                found.len()
            )));
        }
    }
}

fn read_process(kernel: &Kernel<'_>, layout: &Layout, task: u64) -> Result<Process, KernelError> {
    let mut tgid = [0u8; 4];
    let width = (layout.tgid.1 as usize).min(tgid.len());
    kernel.read(Space::KernelVirtual, task + layout.tgid.0, &mut tgid[..width])?;
    let mut comm = [0u8; COMM_MAX];
    let comm = &mut comm[..layout.comm.1 as usize];
    kernel.read(Space::KernelVirtual, task + layout.comm.0, comm)?;
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    Ok(Process {
        tgid: u32::from_le_bytes(tgid),
        comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
        mm: kernel.read_u64(task + layout.mm)?,
    })
}
