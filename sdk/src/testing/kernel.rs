//! The conformance kit for filters with a `prepare` hook (ABI 1.1):
//! [`FakeKernel`], a dumped kernel made of the symbols, types and memory a
//! test gives it, and [`check_kernel_filter`], which runs a filter's hook on
//! it through the ABI table and compares the marks with the expected ones.
//!
//! ```ignore
//! let kernel = FakeKernel::new().with_symbol("secret_key", 0xffff_8000_0010_0000, 32)
//!     .with_memory(0xffff_8000_0010_0000, &[7; 32]);
//! let expected = KernelMarks { erasures: vec![Erasure::kvirt(0xffff_8000_0010_0000, 32, Fill::Byte(b'X'), "secret_key")], ..Default::default() };
//! check_kernel_filter(crate::vmdump_filter(), &params, &kernel, &expected, &[]).unwrap();
//! ```

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use super::filter::check_verdicts;
use super::{Failure, PageCase, check_unknown_key_refused, fail};
use crate::client::{FilterModule, FilterPlugin, KernelServices, StderrHost};
use crate::{Fill, Needs, Params, ServiceError, Space, Verdict};

/// Bytes of the fake kernel's pages.
const PAGE: u64 = 4096;
/// Where the fake kernel's direct map starts: kernel virtual address
/// `PAGE_OFFSET + p` is physical address `p`.
pub const PAGE_OFFSET: u64 = 0xffff_8880_0000_0000;

/// One erasure a hook asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Erasure {
    /// The address space of `addr`.
    pub space: Space,
    /// First byte.
    pub addr: u64,
    /// Bytes.
    pub len: u64,
    /// What they become.
    pub fill: Fill,
    /// The eraseinfo name.
    pub what: String,
}

impl Erasure {
    /// An erasure at a kernel virtual address.
    pub fn kvirt(addr: u64, len: u64, fill: Fill, what: &str) -> Self {
        Self { space: Space::KernelVirtual, addr, len, fill, what: what.to_owned() }
    }
}

/// What a hook marked: pfn ranges (sorted and merged by the kit) and
/// erasures (in the order asked).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelMarks {
    /// Pfns to keep.
    pub keep: Vec<Range<u64>>,
    /// Pfns to leave out.
    pub exclude: Vec<Range<u64>>,
    /// Bytes to erase.
    pub erasures: Vec<Erasure>,
}

fn merged(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.retain(|r| !r.is_empty());
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::new();
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// A member of a fake type.
#[derive(Debug, Clone)]
struct FakeMember {
    offset: u64,
    size: u64,
    type_name: String,
}

/// A dumped kernel for the kit: what a test puts in, and nothing else
/// (a symbol, type or page it lacks is NOT_FOUND or UNREADABLE).
#[derive(Debug, Clone, Default)]
pub struct FakeKernel {
    symbols: BTreeMap<String, (u64, u64)>,
    types: HashMap<String, u64>,
    members: HashMap<(String, String), FakeMember>,
    /// Pages of the direct map, by physical address.
    pages: BTreeMap<u64, Vec<u8>>,
    user: HashMap<u64, Vec<(u64, u64, u64)>>,
    unavailable: bool,
    marks: RefCell<KernelMarks>,
}

impl FakeKernel {
    /// An empty kernel: no symbol, no type, no memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// A dump that can give no service at all (no kallsyms, no BTF).
    pub fn unavailable() -> Self {
        Self { unavailable: true, ..Self::default() }
    }

    /// With symbol `name` at `address`, `size` bytes to the next.
    pub fn with_symbol(mut self, name: &str, address: u64, size: u64) -> Self {
        self.symbols.insert(name.to_owned(), (address, size));
        self
    }

    /// With type `name` (a C name: `struct task_struct`) of `size` bytes.
    pub fn with_type(mut self, name: &str, size: u64) -> Self {
        self.types.insert(name.to_owned(), size);
        self
    }

    /// With `member` of struct `type_name` at `offset`, of `size` bytes and
    /// C type `member_type`.
    pub fn with_member(
        mut self,
        type_name: &str,
        member: &str,
        offset: u64,
        size: u64,
        member_type: &str,
    ) -> Self {
        let m = FakeMember { offset, size, type_name: member_type.to_owned() };
        self.members.insert((type_name.to_owned(), member.to_owned()), m);
        self
    }

    /// With `bytes` at kernel virtual address `vaddr` of the direct map
    /// ([`PAGE_OFFSET`]), the pages they touch readable (zeros elsewhere).
    pub fn with_memory(mut self, vaddr: u64, bytes: &[u8]) -> Self {
        let paddr = vaddr.wrapping_sub(PAGE_OFFSET);
        for (i, &b) in bytes.iter().enumerate() {
            let at = paddr + i as u64;
            let page = self.pages.entry(at / PAGE * PAGE).or_insert_with(|| vec![0; PAGE as usize]);
            page[(at % PAGE) as usize] = b;
        }
        self
    }

    /// With [`SAMPLE_TASKS`] as its task list: the idle task (pid 0),
    /// `kthreadd` (2, a kernel thread), `sshd` (412: pfns 0x900..0x904
    /// and 0x100..0x102) and `postgres` (977: pfns 0x2000..0x2010).
    pub fn with_sample_tasks(self) -> Self {
        self.with_task_list(&SAMPLE_TASKS)
    }

    /// With a task list from `init_task`: one `task_struct` per process of
    /// `processes` (the first is `init_task`), linked through `tasks` in
    /// that order, with `tgid`, `comm` and `mm`; a process with user pages
    /// has an `mm_struct` whose `pgd` maps them, one with `None` is a kernel
    /// thread (`mm` 0). The members are those of [`task_layout`].
    pub fn with_task_list(mut self, processes: &[FakeProcess<'_>]) -> Self {
        use task_layout::*;
        self = self.with_symbol("init_task", task_address(0), TASK_STRIDE);
        for (member, offset, size, c_type) in MEMBERS {
            let (type_name, member) = member.split_once('.').expect("type.member");
            self = self.with_member(&format!("struct {type_name}"), member, offset, size, c_type);
        }
        for (i, p) in processes.iter().enumerate() {
            let (task, next) = (task_address(i), task_address((i + 1) % processes.len()));
            let mm = p.user_pages.map_or(0, |_| task + MM_IN_PAGE);
            let mut comm = p.comm.as_bytes().to_vec();
            comm.resize(16, 0);
            self = self
                .with_memory(task + TASKS, &(next + TASKS).to_le_bytes())
                .with_memory(task + TGID, &p.tgid.to_le_bytes())
                .with_memory(task + MM, &mm.to_le_bytes())
                .with_memory(task + COMM, &comm);
            if let Some(runs) = p.user_pages {
                let pgd = task + PGD_IN_PAGE;
                self = self.with_memory(mm + PGD, &pgd.to_le_bytes()).with_user_pages(pgd, runs);
            }
        }
        self
    }

    /// With the user pages `runs` (`(vaddr, pfn, pages)`) under the top table at `pgd`.
    pub fn with_user_pages(mut self, pgd: u64, runs: &[(u64, u64, u64)]) -> Self {
        self.user.insert(pgd, runs.to_vec());
        self
    }

    /// A copy with no marks.
    fn fresh(&self) -> Self {
        Self { marks: RefCell::default(), ..self.clone() }
    }

    fn available(&self) -> Result<(), ServiceError> {
        if self.unavailable { Err(ServiceError::Unavailable) } else { Ok(()) }
    }

    fn paddr_of(&self, space: Space, addr: u64) -> Result<u64, ServiceError> {
        let paddr = match space {
            Space::Phys => addr,
            Space::KernelVirtual => addr.checked_sub(PAGE_OFFSET).ok_or(ServiceError::Unreadable)?,
        };
        if self.pages.contains_key(&(paddr / PAGE * PAGE)) {
            Ok(paddr)
        } else {
            Err(ServiceError::Unreadable)
        }
    }

    /// The marks made, merged.
    fn take_marks(&self) -> KernelMarks {
        let marks = self.marks.take();
        KernelMarks { keep: merged(marks.keep), exclude: merged(marks.exclude), erasures: marks.erasures }
    }
}

impl KernelServices for FakeKernel {
    fn symbol(&self, name: &str) -> Result<(u64, u64), ServiceError> {
        self.available()?;
        self.symbols.get(name).copied().ok_or(ServiceError::NotFound)
    }

    fn type_size(&self, type_name: &str) -> Result<u64, ServiceError> {
        self.available()?;
        self.types.get(type_name).copied().ok_or(ServiceError::NotFound)
    }

    fn member(&self, type_name: &str, member: &str) -> Result<(u64, u64, String), ServiceError> {
        self.available()?;
        let m = self.members.get(&(type_name.to_owned(), member.to_owned())).ok_or(ServiceError::NotFound)?;
        Ok((m.offset, m.size, m.type_name.clone()))
    }

    fn read(&self, space: Space, addr: u64, buf: &mut [u8]) -> Result<(), ServiceError> {
        self.available()?;
        for (i, byte) in buf.iter_mut().enumerate() {
            let paddr = self.paddr_of(space, addr.wrapping_add(i as u64))?;
            *byte = self.pages[&(paddr / PAGE * PAGE)][(paddr % PAGE) as usize];
        }
        Ok(())
    }

    fn user_pages(&self, pgd: u64, visit: &mut dyn FnMut(u64, u64, u64) -> bool) -> Result<(), ServiceError> {
        self.available()?;
        let runs = self.user.get(&pgd).ok_or(ServiceError::Unreadable)?;
        for &(vaddr, pfn, pages) in runs {
            if !visit(vaddr, pfn, pages) {
                return Err(ServiceError::Other(crate::abi::status::FAILED));
            }
        }
        Ok(())
    }

    fn keep(&self, pfns: Range<u64>) -> Result<(), ServiceError> {
        self.marks.borrow_mut().keep.push(pfns);
        Ok(())
    }

    fn exclude(&self, pfns: Range<u64>) -> Result<(), ServiceError> {
        self.marks.borrow_mut().exclude.push(pfns);
        Ok(())
    }

    fn erase(&self, space: Space, addr: u64, len: u64, fill: Fill, what: &str) -> Result<(), ServiceError> {
        self.available()?;
        let end = addr.checked_add(len).ok_or(ServiceError::Invalid)?;
        let mut at = addr;
        while at < end {
            self.paddr_of(space, at)?;
            at = (at / PAGE + 1) * PAGE;
        }
        let erasure = Erasure { space, addr, len, fill, what: what.to_owned() };
        self.marks.borrow_mut().erasures.push(erasure);
        Ok(())
    }
}

/// A process of [`FakeKernel::with_task_list`].
#[derive(Debug, Clone, Copy)]
pub struct FakeProcess<'a> {
    /// Its thread group id.
    pub tgid: u32,
    /// Its `comm` (up to 15 bytes).
    pub comm: &'a str,
    /// The runs `(vaddr, pfn, pages)` its page tables map; `None` for a
    /// kernel thread.
    pub user_pages: Option<&'a [(u64, u64, u64)]>,
}

/// The processes of [`FakeKernel::with_sample_tasks`].
pub const SAMPLE_TASKS: [FakeProcess<'static>; 4] = [
    FakeProcess { tgid: 0, comm: "swapper/0", user_pages: None },
    FakeProcess { tgid: 2, comm: "kthreadd", user_pages: None },
    FakeProcess {
        tgid: 412,
        comm: "sshd",
        user_pages: Some(&[(0x40_0000, 0x900, 3), (0x40_3000, 0x903, 1), (0x7ff0_0000, 0x100, 2)]),
    },
    FakeProcess { tgid: 977, comm: "postgres", user_pages: Some(&[(0x40_0000, 0x2000, 16)]) },
];

/// Where [`FakeKernel::with_task_list`] puts things: process `i`'s
/// `task_struct` at [`task_layout::task_address`]`(i)`, its `mm_struct` and
/// its top page table in the same 16 KiB.
pub mod task_layout {
    use super::PAGE_OFFSET;

    /// Bytes between two processes' `task_struct`s.
    pub const TASK_STRIDE: u64 = 0x4000;
    /// `task_struct.tasks` (a `struct list_head`).
    pub const TASKS: u64 = 0x10;
    /// `task_struct.tgid` (`pid_t`).
    pub const TGID: u64 = 0x20;
    /// `task_struct.mm`.
    pub const MM: u64 = 0x28;
    /// `task_struct.comm` (`char [16]`).
    pub const COMM: u64 = 0x40;
    /// `mm_struct.pgd`.
    pub const PGD: u64 = 0x50;
    /// The `mm_struct`, from its process's `task_struct`.
    pub const MM_IN_PAGE: u64 = 0x1000;
    /// The top page table, from its process's `task_struct`.
    pub const PGD_IN_PAGE: u64 = 0x2000;
    /// The members, as `type.member`, offset, size and C type.
    pub const MEMBERS: [(&str, u64, u64, &str); 5] = [
        ("task_struct.tasks", TASKS, 16, "struct list_head"),
        ("task_struct.tgid", TGID, 4, "pid_t"),
        ("task_struct.mm", MM, 8, "struct mm_struct *"),
        ("task_struct.comm", COMM, 16, "char [16]"),
        ("mm_struct.pgd", PGD, 8, "pgd_t *"),
    ];

    /// The `task_struct` of process `i`.
    pub fn task_address(i: usize) -> u64 {
        PAGE_OFFSET + 0x10_0000 + i as u64 * TASK_STRIDE
    }
}

/// What the kit saw on a passing filter with a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFilterReport {
    /// Plugin name.
    pub name: String,
    /// The marks its hook made.
    pub marks: KernelMarks,
    /// Page cases checked after the hook.
    pub cases: usize,
}

/// A module of `plugin`, prepared on `kernel`, and the marks it made.
fn prepared(
    plugin: FilterPlugin,
    params: &Params,
    kernel: &FakeKernel,
) -> Result<(FilterModule, KernelMarks), Failure> {
    let mut module = plugin.init(params, Arc::new(StderrHost)).map_err(|e| fail("module_init", "", e))?;
    let kernel = kernel.fresh();
    module.prepare(&kernel).map_err(|e| fail("prepare", "", e))?;
    Ok((module, kernel.take_marks()))
}

/// Checks a filter with a `prepare` hook (it needs [`Needs::KERNEL`]): an
/// unknown parameter is refused; its hook on `kernel` makes exactly the
/// `expected` marks, and the same on a second module (the marks depend on
/// the kernel alone); on a kernel that has nothing it finds nothing to
/// mark or fails with an error, never a panic, and on a dump that gives
/// no service it fails with an error; after the hook, each of `cases` gets its
/// verdict (a filter that classifies).
///
/// # Errors
/// The first rule the plugin breaks.
pub fn check_kernel_filter(
    plugin: FilterPlugin,
    params: &Params,
    kernel: &FakeKernel,
    expected: &KernelMarks,
    cases: &[(PageCase, Verdict)],
) -> Result<KernelFilterReport, Failure> {
    let info = plugin.info();
    if !info.needs.contains(Needs::KERNEL) {
        return Err(fail("needs", "", "the filter has no prepare hook (it does not need Needs::KERNEL)"));
    }
    check_unknown_key_refused(params, |bogus| plugin.init(bogus, Arc::new(StderrHost)).is_ok())?;
    let (module, marks) = prepared(plugin, params, kernel)?;
    let expected = KernelMarks {
        keep: merged(expected.keep.clone()),
        exclude: merged(expected.exclude.clone()),
        erasures: expected.erasures.clone(),
    };
    if marks != expected {
        return Err(fail("marks", "", format!("the hook marked {marks:?}, expected {expected:?}")));
    }
    let (_, again) = prepared(plugin, params, kernel)?;
    if again != marks {
        return Err(fail(
            "determinism",
            "",
            format!("a second module marked {again:?}, the first {marks:?}"),
        ));
    }
    for (check, bare) in [("empty kernel", FakeKernel::new()), ("no services", FakeKernel::unavailable())] {
        let mut other = plugin.init(params, Arc::new(StderrHost)).map_err(|e| fail("module_init", "", e))?;
        match other.prepare(&bare) {
            Err(e) if e.is_panic() => return Err(fail(check, "", e)),
            Ok(()) if bare.unavailable => {
                return Err(fail(check, "", "the hook succeeded on a dump that gave no service at all"));
            }
            _ => {}
        }
    }
    if !cases.is_empty() {
        check_verdicts(&module, info.needs, cases)?;
    }
    Ok(KernelFilterReport { name: info.name, marks, cases: cases.len() })
}
