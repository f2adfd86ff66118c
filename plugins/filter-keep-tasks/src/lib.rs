//! vmdump filter plugin `keep-tasks`: keeps the user memory of chosen
//! processes in a dump whose level leaves user pages out (-d 31), so that a
//! debugger can rebuild those processes from the dump (drgn's gcore reads
//! them through their page tables, which -d 31 keeps).
//!
//! Its `prepare` hook (ABI 1.1) walks the dumped kernel's task list from
//! `init_task`, picks the processes named by thread group id (`pid`) or by
//! `comm`, and keeps every present page their page tables map, found by the
//! host's walk of each `mm->pgd`. No page is asked about afterwards.
//!
//! Parameters (at least one): `pid`, a comma-separated list of process ids;
//! `comm`, a comma-separated list of command names (`task_struct.comm`, at
//! most 15 bytes, as `ps -o comm` shows them). A name that matches no
//! process is a warning, not a failure: a profile may list processes that
//! are not always running. A named process whose page tables cannot be
//! walked fails the filter, so a dump never seems to hold what it does not.
#![deny(unsafe_code)]

pub mod tasks;

use std::collections::BTreeSet;

use tasks::Process;
use vmdump_sdk::{Filter, FilterFactory, Host, Kernel, LogLevel, Needs, PageView, Params, SdkError, Verdict};

/// The processes to keep, as the parameters name them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Thread group ids.
    pub pids: BTreeSet<u32>,
    /// Command names.
    pub comms: BTreeSet<String>,
}

impl Selection {
    /// The selection of `pid` and `comm`.
    ///
    /// # Errors
    /// Neither is given, a pid is not a number, or a name is empty or
    /// longer than a `comm` holds.
    pub fn from_params(params: &Params) -> Result<Self, SdkError> {
        let list = |key: &str| params.get_str(key).map(|v| v.split(',').map(str::trim).collect::<Vec<_>>());
        let mut selection = Self::default();
        for pid in list("pid").unwrap_or_default() {
            let pid = pid
                .parse()
                .map_err(|_| SdkError::InvalidParam(format!("`pid`: `{pid}` is not a process id")))?;
            selection.pids.insert(pid);
        }
        for comm in list("comm").unwrap_or_default() {
            if comm.is_empty() || comm.len() > 15 {
                return Err(SdkError::InvalidParam(format!(
                    "`comm`: `{comm}` is not a command name (1 to 15 bytes)"
                )));
            }
            selection.comms.insert(comm.to_owned());
        }
        if selection.pids.is_empty() && selection.comms.is_empty() {
            return Err(SdkError::InvalidParam("`pid` or `comm`: name at least one process".into()));
        }
        Ok(selection)
    }

    fn picks(&self, p: &Process) -> bool {
        self.pids.contains(&p.tgid) || self.comms.contains(&p.comm)
    }

    /// The names that pick none of `processes`.
    fn unmatched(&self, processes: &[&Process]) -> Vec<String> {
        let pids = self.pids.iter().filter(|&&pid| !processes.iter().any(|p| p.tgid == pid));
        let comms = self.comms.iter().filter(|c| !processes.iter().any(|p| &p.comm == *c));
        pids.map(|pid| format!("pid {pid}")).chain(comms.map(|c| format!("comm {c}"))).collect()
    }
}

/// The filter: what to keep, and where to say what it did.
pub struct KeepTasks {
    selection: Selection,
    host: Host,
}

/// Never asked about a page: the filter decides in `prepare`.
pub struct NoPages;

impl FilterFactory for KeepTasks {
    type Context = NoPages;
    const NAME: &'static std::ffi::CStr = c"keep-tasks";
    const NEEDS: Needs = Needs::KERNEL;
    const CLASSIFIES: bool = false;
    const DESCRIPTION: &'static std::ffi::CStr =
        c"keeps the user pages of processes, param pid = N,N... and/or comm = NAME,NAME...";

    fn init(params: &Params, host: &Host) -> Result<Self, SdkError> {
        params.accept_only(&["pid", "comm"])?;
        Ok(Self { selection: Selection::from_params(params)?, host: *host })
    }

    fn new_context(&self) -> Result<NoPages, SdkError> {
        Ok(NoPages)
    }

    fn prepare(&mut self, kernel: &Kernel<'_>) -> Result<(), SdkError> {
        let all = tasks::processes(kernel)?;
        let picked: Vec<&Process> = all.iter().filter(|p| self.selection.picks(p)).collect();
        for name in self.selection.unmatched(&picked) {
            self.host.log(LogLevel::Warn, &format!("no process has {name}: nothing kept for it"));
        }
        let pgd = kernel.member("struct mm_struct", "pgd")?.offset;
        let mut walked = BTreeSet::new();
        for p in &picked {
            if p.mm == 0 {
                self.host.log(
                    LogLevel::Warn,
                    &format!("pid {} ({}) is a kernel thread: no user pages", p.tgid, p.comm),
                );
                continue;
            }
            if !walked.insert(p.mm) {
                continue; // shares its memory with a process already kept
            }
            let pages = keep_mapped(kernel, kernel.read_u64(p.mm + pgd)?)
                .map_err(|e| SdkError::failed(format!("pid {} ({}): {e}", p.tgid, p.comm)))?;
            self.host.log(LogLevel::Info, &format!("pid {} ({}): {pages} mapped pages kept", p.tgid, p.comm));
        }
        Ok(())
    }
}

/// Keeps every pfn the page tables at `pgd` map (the host merges the
/// runs); the pages mapped, a page mapped twice counted twice.
fn keep_mapped(kernel: &Kernel<'_>, pgd: u64) -> Result<u64, SdkError> {
    let (mut pages, mut refused) = (0, None);
    let walked = kernel.user_pages(pgd, |_vaddr, pfn, count| {
        pages += count;
        refused = kernel.keep(pfn..pfn + count).err();
        refused.is_none()
    });
    match refused {
        Some(why) => Err(why.into()), // the walk stopped because of it
        None => walked.map(|()| pages).map_err(Into::into),
    }
}

impl Filter for NoPages {
    fn classify(&mut self, _page: &PageView<'_>) -> Result<Verdict, SdkError> {
        Ok(Verdict::Keep)
    }
}

vmdump_sdk::export_filter!(KeepTasks);
