//! The registers of each CPU at the crash, from its `NT_PRSTATUS` note
//! (`struct elf_prstatus`): the pid of the task it ran, and the registers
//! an unwinder starts from. The notes are in CPU order.

use vmdump_format::elf::{NOTE_NAME_CORE, NT_PRSTATUS, Notes};
use vmdump_format::machine::Machine;

/// Where `pr_pid` is in `struct elf_prstatus` (after `pr_info`, `pr_cursig`
/// and its padding, `pr_sigpend`, `pr_sighold`), and `pr_reg` (after the
/// pids and four `timeval`s): the same on every 64-bit machine.
const PR_PID: usize = 32;
const PR_REG: usize = 112;

/// One CPU's registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registers {
    /// The CPU (the note's place among the PRSTATUS notes).
    pub cpu: u32,
    /// The pid of the task it ran (0 for an idle CPU).
    pub pid: u32,
    /// The instruction pointer.
    pub ip: u64,
    /// The stack pointer.
    pub sp: u64,
    /// The frame pointer (x86_64 `rbp`, arm64 `x29`).
    pub fp: u64,
}

impl Registers {
    /// The registers in `notes`, of `machine`.
    pub fn of_notes(notes: &Notes, machine: Machine) -> Vec<Registers> {
        // pr_reg words: x86_64's user_regs_struct (rbp 4, rip 16, rsp 19),
        // arm64's user_pt_regs (x29 29, sp 31, pc 32), ppc64's pt_regs
        // (r1, the stack pointer and back chain, 1; nip 32), riscv64's
        // user_regs_struct (pc 0, sp 2, s0 the frame pointer 8), s390x's
        // s390_regs (the PSW's address 1, then r0..r15 from 2: r15 the
        // stack pointer 17, r11 the frame pointer 13).
        let (ip, sp, fp) = match machine {
            Machine::X86_64 => (16, 19, 4),
            Machine::Aarch64 => (32, 31, 29),
            Machine::Ppc64le => (32, 1, 1),
            Machine::Riscv64 => (0, 2, 8),
            Machine::S390x => (1, 17, 13),
        };
        let e = machine.endian();
        let prstatus =
            notes.iter().flatten().filter(|n| n.name == NOTE_NAME_CORE && n.note_type == NT_PRSTATUS);
        prstatus
            .enumerate()
            .filter(|(_, n)| n.desc.len() >= PR_REG + 8 * (ip.max(sp) + 1))
            .map(|(cpu, n)| {
                let word = |i: usize| e.u64(n.desc, PR_REG + 8 * i);
                Registers {
                    cpu: cpu as u32,
                    pid: e.u32(n.desc, PR_PID),
                    ip: word(ip),
                    sp: word(sp),
                    fp: word(fp),
                }
            })
            .collect()
    }
}
