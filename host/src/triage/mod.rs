//! The triage report of a crash: what a fleet wants to know first, read
//! from the dump with no vmlinux (docs/triage.md). The kernel and the
//! crash's time from VMCOREINFO; the panic message, its CPU and task from
//! the kernel log; the registers of that CPU from its PRSTATUS note; its
//! stack, symbolized with kallsyms; the taint flags.

mod registers;
mod stack;
pub(crate) mod time;

use serde::Serialize;

use crate::kernel::KernelView;
use registers::Registers;
pub use stack::{Frame, StackMethod};

/// What `vmdump triage` reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Triage {
    /// `init_uts_ns`'s release (VMCOREINFO's `OSRELEASE`).
    pub release: Option<String>,
    /// The kernel's build id (VMCOREINFO's `BUILD-ID`).
    pub build_id: Option<String>,
    /// When it crashed (VMCOREINFO's `CRASHTIME`), as UTC.
    pub crash_time: Option<String>,
    /// Seconds since boot of the kernel log's last record.
    pub uptime_seconds: Option<f64>,
    /// The panic's message (`Kernel panic - not syncing: ...`).
    pub panic: Option<String>,
    /// Oopses, BUGs and warnings the log records, first lines.
    pub oops: Vec<String>,
    /// The CPU that panicked.
    pub cpu: Option<u32>,
    /// The task that panicked: pid and name.
    pub task: Option<Task>,
    /// Its instruction pointer, and the symbol it is in.
    pub instruction_pointer: Option<Frame>,
    /// Its stack, innermost first.
    pub stack: Vec<Frame>,
    /// How the stack was found.
    pub stack_method: Option<StackMethod>,
    /// The taint flags, as the kernel prints them (`G` when none), and each
    /// flag's name.
    pub taint: Option<Taint>,
    /// What could not be read, and why.
    pub missing: Vec<String>,
}

/// A task.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    /// Its pid.
    pub pid: u32,
    /// Its `comm`, when the task list has it.
    pub comm: Option<String>,
}

/// The kernel's taint.
#[derive(Debug, Clone, Serialize)]
pub struct Taint {
    /// `tainted_mask`.
    pub mask: u64,
    /// The flags' letters, e.g. `D` (`G` when none of the proprietary kind).
    pub letters: String,
    /// Each flag set, by name.
    pub flags: Vec<&'static str>,
}

/// The kernel's taint flags: bit, letter, name (include/linux/panic.h).
const TAINTS: [(u32, char, &str); 20] = [
    (0, 'P', "PROPRIETARY_MODULE"),
    (1, 'F', "FORCED_MODULE"),
    (2, 'S', "CPU_OUT_OF_SPEC"),
    (3, 'R', "FORCED_RMMOD"),
    (4, 'M', "MACHINE_CHECK"),
    (5, 'B', "BAD_PAGE"),
    (6, 'U', "USER"),
    (7, 'D', "DIE"),
    (8, 'A', "OVERRIDDEN_ACPI_TABLE"),
    (9, 'W', "WARN"),
    (10, 'C', "CRAP"),
    (11, 'I', "FIRMWARE_WORKAROUND"),
    (12, 'O', "OOT_MODULE"),
    (13, 'E', "UNSIGNED_MODULE"),
    (14, 'L', "SOFTLOCKUP"),
    (15, 'K', "LIVEPATCH"),
    (16, 'X', "AUX"),
    (17, 'T', "RANDSTRUCT"),
    (18, 'N', "TEST"),
    (19, 'J', "FWCTL"),
];

impl Triage {
    /// Reads the triage of the kernel of `kernel`, whose ELF notes are
    /// `notes`. Whatever cannot be read is left out and said in
    /// [`Triage::missing`]: a triage is never refused.
    pub fn read(kernel: &KernelView<'_>, notes: &vmdump_format::elf::Notes) -> Self {
        let info = kernel.info();
        let mut t = Triage {
            release: info.osrelease().map(str::to_owned),
            build_id: info.get("BUILD-ID").map(str::to_owned),
            crash_time: info.crashtime().map(time::utc),
            uptime_seconds: None,
            panic: None,
            oops: Vec::new(),
            cpu: None,
            task: None,
            instruction_pointer: None,
            stack: Vec::new(),
            stack_method: None,
            taint: None,
            missing: Vec::new(),
        };
        let (caller, log_comms) = t.read_log(kernel);
        t.read_taint(kernel);
        let registers = Registers::of_notes(notes, kernel.memory().arch().machine());
        if registers.is_empty() {
            t.missing.push("registers: the dump has no PRSTATUS notes".into());
        }
        t.find_cpu_and_task(kernel, caller, &registers, &log_comms);
        if let Some(regs) = t.cpu.and_then(|cpu| registers.iter().find(|r| r.cpu == cpu)) {
            match stack::unwind(kernel, regs) {
                Ok((ip, frames, method)) => {
                    t.instruction_pointer = Some(ip);
                    t.stack = frames;
                    t.stack_method = Some(method);
                }
                Err(why) => t.missing.push(format!("stack: {why}")),
            }
        }
        t
    }

    /// The panic, the oopses and the uptime from the kernel log; returns
    /// the caller id of the panic's record (`T<pid>` or `C<cpu>`), and the
    /// tasks the log names in the headers of its reports (`PID: 99 Comm: sh`).
    fn read_log(&mut self, kernel: &KernelView<'_>) -> (Option<String>, Vec<(u32, String)>) {
        let log = match crate::dmesg::kernel_log(kernel.memory(), kernel.info()) {
            Ok(log) => String::from_utf8_lossy(&log).into_owned(),
            Err(e) => {
                self.missing.push(format!("kernel log: {e}"));
                return (None, Vec::new());
            }
        };
        let comms = log.lines().filter_map(named_task).collect();
        let mut caller = None;
        for line in log.lines().filter(|l| l.starts_with('[')) {
            let (stamp, rest) = line[1..].split_once("] ").unwrap_or(("", line));
            self.uptime_seconds = stamp.trim().parse().ok().or(self.uptime_seconds);
            let (id, text) = match rest.strip_prefix('[').and_then(|r| r.split_once("] ")) {
                Some((id, text)) => (Some(id.trim().to_owned()), text),
                None => (None, rest),
            };
            if let Some(message) = text.strip_prefix("Kernel panic - not syncing: ") {
                self.panic = Some(message.to_owned());
                caller = id;
            } else if ["BUG: ", "Oops: ", "WARNING: ", "general protection fault"]
                .iter()
                .any(|p| text.starts_with(p))
            {
                self.oops.push(text.to_owned());
            }
        }
        if self.panic.is_none() {
            self.missing.push("panic: the kernel log has no \"Kernel panic - not syncing\" line".into());
        }
        (caller, comms)
    }

    fn read_taint(&mut self, kernel: &KernelView<'_>) {
        let mask = kernel
            .symbols()
            .map_err(|e| e.to_string())
            .and_then(|s| s.address_of("tainted_mask").map_err(|e| e.to_string()))
            .and_then(|at| kernel.memory().read_u64(at).map_err(|e| e.to_string()));
        match mask {
            Ok(mask) => self.taint = Some(taint(mask)),
            Err(why) => self.missing.push(format!("taint: {why}")),
        }
    }

    /// The CPU and task of the panic: the caller id of its log record,
    /// else `panic_cpu` and the task its PRSTATUS note names.
    fn find_cpu_and_task(
        &mut self,
        kernel: &KernelView<'_>,
        caller: Option<String>,
        registers: &[Registers],
        log_comms: &[(u32, String)],
    ) {
        let (task_pid, caller_cpu) = match caller.as_deref().map(|c| c.split_at(1)) {
            Some(("T", pid)) => (pid.parse().ok(), None),
            Some(("C", cpu)) => (None, cpu.parse().ok()),
            _ => (None, None),
        };
        let panic_cpu = || -> Option<u32> {
            let at = kernel.symbols().ok()?.address_of("panic_cpu").ok()?;
            let mut word = [0u8; 4];
            kernel.memory().read_virt(at, &mut word).ok()?;
            Some(kernel.memory().arch().endian().u32(&word, 0)).filter(|&c| c != u32::MAX)
        };
        // The CPU whose PRSTATUS names the panicking task, else panic_cpu.
        let by_task =
            task_pid.filter(|&p| p != 0).and_then(|p| registers.iter().find(|r| r.pid == p)).map(|r| r.cpu);
        self.cpu = caller_cpu.or(by_task).or_else(panic_cpu);
        let pid = task_pid.or_else(|| registers.iter().find(|r| Some(r.cpu) == self.cpu).map(|r| r.pid));
        if let Some(pid) = pid {
            // The log's report header names it; else the task list (which
            // needs the kernel's BTF and a walk of every task).
            let logged = log_comms.iter().find(|(p, _)| *p == pid).map(|(_, comm)| comm.clone());
            self.task = Some(Task { pid, comm: logged.or_else(|| task_comm(kernel, pid)) });
        }
        if self.cpu.is_none() {
            self.missing.push("cpu: neither the log nor panic_cpu says which CPU panicked".into());
        }
    }
}

fn taint(mask: u64) -> Taint {
    let set: Vec<_> = TAINTS.iter().filter(|(bit, ..)| mask & (1 << bit) != 0).collect();
    let mut letters: String = set.iter().map(|(_, letter, _)| *letter).collect();
    if mask & 1 == 0 {
        letters.insert(0, 'G'); // no proprietary module: "G" as the kernel prints it
    }
    Taint { mask, letters, flags: set.iter().map(|(.., name)| *name).collect() }
}

/// The task a report's header names: `CPU: 1 PID: 99 Comm: sh Not tainted`
/// (newer kernels put `UID: 0` before the pid; `Kdump: loaded` may follow
/// the comm). A comm holds no space in
/// these lines only when the task's has none: a comm with a space is left
/// to the task list.
fn named_task(line: &str) -> Option<(u32, String)> {
    let (_, rest) = line.split_once(" PID: ")?;
    let (pid, rest) = rest.split_once(" Comm: ")?;
    let end = [" Kdump: ", " Not tainted", " Tainted: "].iter().filter_map(|m| rest.find(m)).min()?;
    let comm = rest[..end].trim_end();
    (!comm.is_empty() && comm.len() <= 15 && !comm.contains(' '))
        .then(|| Some((pid.trim().parse().ok()?, comm.to_string())))?
}

/// Most tasks walked for a pid's name.
const MAX_TASKS: usize = 1 << 20;

/// The `comm` of the task `pid`, from the task list (`init_task.tasks`).
fn task_comm(kernel: &KernelView<'_>, pid: u32) -> Option<String> {
    let types = kernel.types().ok()?;
    let init = kernel.symbols().ok()?.address_of("init_task").ok()?;
    let link = types.member("task_struct", "tasks").ok()?.offset();
    let pid_at = types.member("task_struct", "pid").ok()?.offset();
    let comm_at = types.member("task_struct", "comm").ok()?.offset();
    let memory = kernel.memory();
    let mut task = init;
    for _ in 0..MAX_TASKS {
        let mut word = [0u8; 4];
        memory.read_virt(task + pid_at, &mut word).ok()?;
        if memory.arch().endian().u32(&word, 0) == pid {
            let mut comm = [0u8; 16];
            memory.read_virt(task + comm_at, &mut comm).ok()?;
            let end = comm.iter().position(|&b| b == 0).unwrap_or(16);
            return Some(String::from_utf8_lossy(&comm[..end]).into_owned());
        }
        task = memory.read_u64(task + link).ok()?.checked_sub(link)?;
        if task == init {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn report_headers_name_their_task() {
        let line = "[   12.5] [  T99] CPU: 1 PID: 99 Comm: sh Not tainted 6.1.0-57-amd64 #1 Debian 6.1.192-3";
        assert_eq!(super::named_task(line), Some((99, "sh".into())));
        let newer = "[ 1.0] CPU: 0 UID: 0 PID: 412 Comm: kworker/0:1 Tainted: G        W  7.2.13";
        assert_eq!(super::named_task(newer), Some((412, "kworker/0:1".into())));
        let kdump = "[12.0] [T1] CPU: 1 PID: 1 Comm: init Kdump: loaded Not tainted 6.1.0-57-amd64 #1";
        assert_eq!(super::named_task(kdump), Some((1, "init".into())));
        assert_eq!(super::named_task("[ 1.0] Comm: x"), None);
    }
}
