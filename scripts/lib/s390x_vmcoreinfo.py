#!/usr/bin/python3
"""The VMCOREINFO note of an s390x QEMU dump, which QEMU leaves out.

usage: s390x_vmcoreinfo.py add IN OUT    a copy of IN with the note added
       s390x_vmcoreinfo.py lowcore FILE  where the note is (0xe0c), its header
       s390x_vmcoreinfo.py summary FILE  header, program headers, notes
       s390x_vmcoreinfo.py vmcoreinfo FILE  the VMCOREINFO note's text

QEMU's dump-guest-memory of an s390x guest (big-endian ELF64, e_machine
22) has the CPUs' notes but no VMCOREINFO: s390x has no fw_cfg, so QEMU's
vmcoreinfo device is not there. The kernel keeps the physical address of
its VMCOREINFO ELF note (header, "VMCOREINFO\\0", the key=value text) as an
8-byte big-endian value at 0xe0c of the absolute lowcore (physical 0, not a
CPU's prefix page): docs/s390x.md section 3.

`add` writes a new ELF: the ELF header, the program headers right after it
(e_phoff 64, no section header table: makedumpfile takes the program
headers to start at 64, as in /proc/vmcore; QEMU puts a section header
there and the program headers at 192), the PT_NOTE segment (IN's notes,
byte for byte, then the kernel's note as it is in memory), then the other
segments' data, moved by a multiple of 4096 (their offsets fixed up, their
alignment in the file kept). Everything stays big-endian. Standard library
only.

QEMU 7.2 on a big-endian guest also writes e_ehsize as 8 and its string
table's section header (the second one) in little-endian: neither is
carried over (e_ehsize 64, no sections).
"""
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
EM_S390 = 22
VMCOREINFO_ADDR = 0xE0C
PHDR = struct.Struct(">IIQQQQQQ")
CHUNK = 1 << 24


def pad4(n):
    return (n + 3) & ~3


class Elf:
    def __init__(self, f):
        self.f = f
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            sys.exit("s390x_vmcoreinfo.py: not an ELF64 file")
        if head[5] != 2:
            sys.exit("s390x_vmcoreinfo.py: not a big-endian ELF (an s390x dump is)")
        self.head = head
        self.type, self.machine = struct.unpack_from(">HH", head, 16)
        self.phoff, self.shoff = struct.unpack_from(">QQ", head, 32)
        (self.ehsize, self.phentsize, self.phnum, _shentsize, self.shnum,
         _shstrndx) = struct.unpack_from(">6H", head, 52)
        if self.phnum == 0xFFFF:
            sys.exit("s390x_vmcoreinfo.py: more than 65534 program headers (PN_XNUM) is not handled")
        f.seek(self.phoff)
        table = f.read(self.phentsize * self.phnum)
        self.segs = [list(PHDR.unpack_from(table, i * self.phentsize)) for i in range(self.phnum)]

    def notes(self):
        """(owner, type, raw note bytes) of every note of every PT_NOTE."""
        for p_type, _flags, off, _v, _p, filesz, *_rest in self.segs:
            if p_type != PT_NOTE:
                continue
            self.f.seek(off)
            data = self.f.read(filesz)
            at = 0
            while at + 12 <= len(data):
                namesz, descsz, n_type = struct.unpack_from(">III", data, at)
                end = at + 12 + pad4(namesz) + pad4(descsz)
                yield data[at + 12:at + 12 + namesz].rstrip(b"\0").decode(errors="replace"), n_type, data[at:end]
                at = end

    def note_bytes(self):
        out = b""
        for p_type, _flags, off, _v, _p, filesz, *_rest in self.segs:
            if p_type == PT_NOTE:
                self.f.seek(off)
                out += self.f.read(filesz)
        return out

    def read_phys(self, addr, size):
        for p_type, _flags, off, _v, paddr, filesz, *_rest in self.segs:
            if p_type == PT_LOAD and paddr <= addr and addr + size <= paddr + filesz:
                self.f.seek(off + addr - paddr)
                return self.f.read(size)
        sys.exit(f"s390x_vmcoreinfo.py: physical {addr:#x}+{size:#x} is in no PT_LOAD")

    def kernel_note(self):
        """(physical address, the kernel's VMCOREINFO note as raw bytes)."""
        addr, = struct.unpack(">Q", self.read_phys(VMCOREINFO_ADDR, 8))
        if addr == 0:
            sys.exit("s390x_vmcoreinfo.py: the lowcore's 0xe0c is 0: no VMCOREINFO note (not an s390x Linux dump?)")
        namesz, descsz, _type = struct.unpack(">III", self.read_phys(addr, 12))
        if namesz != 11 or not 0 < descsz < 1 << 20:
            sys.exit(f"s390x_vmcoreinfo.py: no VMCOREINFO note header at {addr:#x} "
                     f"(namesz {namesz}, descsz {descsz:#x})")
        raw = self.read_phys(addr, 12 + pad4(namesz) + pad4(descsz))
        if raw[12:23] != b"VMCOREINFO\0":
            sys.exit(f"s390x_vmcoreinfo.py: the note at {addr:#x} is {raw[12:23]!r}, not VMCOREINFO")
        return addr, raw


def add(src, dst):
    with open(src, "rb") as f:
        elf = Elf(f)
        if elf.machine != EM_S390:
            sys.exit(f"s390x_vmcoreinfo.py: e_machine {elf.machine}, not S/390 ({EM_S390})")
        if any(name == "VMCOREINFO" for name, _t, _r in elf.notes()):
            sys.exit(f"s390x_vmcoreinfo.py: {src} has a VMCOREINFO note already")
        _addr, kernel = elf.kernel_note()
        notes = elf.note_bytes() + kernel
        others = [s for s in elf.segs if s[0] != PT_NOTE]
        note_off = 64 + PHDR.size * (1 + len(others))
        first = min((s[2] for s in others if s[5]), default=note_off + len(notes))
        # the smallest multiple of 4096 that puts the data after the notes
        shift = -((first - note_off - len(notes)) // 4096) * 4096
        flags, align = next(((s[1], s[7]) for s in elf.segs if s[0] == PT_NOTE), (0, 0))
        phdrs = [PHDR.pack(PT_NOTE, flags, note_off, 0, 0, len(notes), len(notes), align)]
        for s in others:
            s = list(s)
            if s[5]:
                s[2] += shift
            phdrs.append(PHDR.pack(*s))
        head = bytearray(elf.head)
        struct.pack_into(">QQ", head, 32, 64, 0)  # e_phoff, e_shoff
        struct.pack_into(">6H", head, 52, 64, PHDR.size, len(phdrs), 0, 0, 0)
        with open(dst, "wb") as out:
            out.write(bytes(head) + b"".join(phdrs) + notes)
            for s in sorted((s for s in others if s[5]), key=lambda s: s[2]):
                if out.tell() > s[2] + shift:
                    sys.exit("s390x_vmcoreinfo.py: IN's segments overlap")
                out.write(b"\0" * (s[2] + shift - out.tell()))
                f.seek(s[2])
                left = s[5]
                while left:
                    chunk = f.read(min(CHUNK, left))
                    if not chunk:
                        sys.exit(f"s390x_vmcoreinfo.py: {src} ends inside a segment")
                    out.write(chunk)
                    left -= len(chunk)
    return 0


def lowcore(path):
    with open(path, "rb") as f:
        addr, raw = Elf(f).kernel_note()
        namesz, descsz, n_type = struct.unpack_from(">III", raw)
        print(f"lowcore 0xe0c: {addr:#x}: note namesz {namesz} descsz {descsz:#x} type {n_type}")
    return 0


def summary(path):
    with open(path, "rb") as f:
        elf = Elf(f)
        print(f"machine {elf.machine}, big-endian, e_type {elf.type}, e_phoff {elf.phoff}, "
              f"e_phnum {elf.phnum}, e_shoff {elf.shoff}, e_shnum {elf.shnum}, e_ehsize {elf.ehsize}")
        for p_type, _flags, off, vaddr, paddr, filesz, memsz, _align in elf.segs:
            kind = {PT_LOAD: "LOAD", PT_NOTE: "NOTE"}.get(p_type, str(p_type))
            print(f"  {kind:<4} offset {off:#x} vaddr {vaddr:#x} paddr {paddr:#x} "
                  f"filesz {filesz:#x} memsz {memsz:#x}")
        for name, n_type, raw in elf.notes():
            print(f"  note {name} type {n_type:#x} size {struct.unpack_from('>I', raw, 4)[0]}")
    return 0


def vmcoreinfo(path):
    with open(path, "rb") as f:
        for name, _type, raw in Elf(f).notes():
            if name == "VMCOREINFO":
                descsz, = struct.unpack_from(">I", raw, 4)
                sys.stdout.write(raw[24:24 + descsz].rstrip(b"\0").decode())
                return 0
    sys.exit(f"s390x_vmcoreinfo.py: {path} has no VMCOREINFO note")


def main(argv):
    if len(argv) == 4 and argv[1] == "add":
        return add(argv[2], argv[3])
    if len(argv) == 3 and argv[1] in ("lowcore", "summary", "vmcoreinfo"):
        return {"lowcore": lowcore, "summary": summary, "vmcoreinfo": vmcoreinfo}[argv[1]](argv[2])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
