#!/usr/bin/python3
"""Looks at an ELF core file (a vmcore) without any library.

usage: elfcore.py summary FILE       header, program headers, notes
       elfcore.py vmcoreinfo FILE    the VMCOREINFO note's text
       elfcore.py phdrs-at-64 IN OUT a copy of IN whose program headers
                                     follow the ELF header (e_phoff 64)

Why phdrs-at-64: QEMU 7.2's dump-guest-memory writes one section header
(and its string table) at offset 64 and the program headers after it, at
offset 192. That is valid ELF, and vmdump reads e_phoff as it is; but
makedumpfile (1.7.2 and upstream) takes the program headers to start at
offset 64, as they do in /proc/vmcore, and refuses the file. The copy moves
the program headers to 64 and drops the section header table (e_shoff,
e_shnum, e_shstrndx 0, e_ehsize 64). No segment data moves: the bytes freed
up to the old end of the program headers are zeroed.
"""
import shutil
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
MACHINES = {62: "x86_64", 183: "aarch64"}


def header(f):
    f.seek(0)
    head = f.read(64)
    if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        sys.exit("elfcore.py: not a little-endian ELF64 file")
    e_type, e_machine = struct.unpack_from("<HH", head, 16)
    e_phoff, e_shoff = struct.unpack_from("<QQ", head, 32)
    e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<6H", head, 52)
    if e_phnum == 0xFFFF:
        sys.exit("elfcore.py: more than 65534 program headers (PN_XNUM) is not handled")
    return dict(type=e_type, machine=e_machine, phoff=e_phoff, shoff=e_shoff, ehsize=e_ehsize,
                phentsize=e_phentsize, phnum=e_phnum, shentsize=e_shentsize, shnum=e_shnum,
                shstrndx=e_shstrndx)


def segments(f, h):
    out = []
    for i in range(h["phnum"]):
        f.seek(h["phoff"] + i * h["phentsize"])
        p_type, p_flags, off, vaddr, paddr, filesz, memsz, align = struct.unpack("<IIQQQQQQ", f.read(56))
        out.append(dict(type=p_type, flags=p_flags, offset=off, vaddr=vaddr, paddr=paddr,
                        filesz=filesz, memsz=memsz, align=align))
    return out


def notes(f, segs):
    """(owner, type, descriptor bytes) of every note of every PT_NOTE."""
    for s in segs:
        if s["type"] != PT_NOTE:
            continue
        f.seek(s["offset"])
        data = f.read(s["filesz"])
        at = 0
        while at + 12 <= len(data):
            namesz, descsz, n_type = struct.unpack_from("<III", data, at)
            at += 12
            name = data[at:at + namesz].rstrip(b"\0").decode(errors="replace")
            at += (namesz + 3) & ~3
            desc = data[at:at + descsz]
            at += (descsz + 3) & ~3
            yield name, n_type, desc


def summary(path):
    with open(path, "rb") as f:
        h = header(f)
        segs = segments(f, h)
        print(f"machine {MACHINES.get(h['machine'], h['machine'])}, e_type {h['type']}, "
              f"e_phoff {h['phoff']}, e_phnum {h['phnum']}, e_shoff {h['shoff']}, e_shnum {h['shnum']}, "
              f"e_ehsize {h['ehsize']}")
        for s in segs:
            kind = {PT_LOAD: "LOAD", PT_NOTE: "NOTE"}.get(s["type"], str(s["type"]))
            print(f"  {kind:<4} offset {s['offset']:#x} vaddr {s['vaddr']:#x} paddr {s['paddr']:#x} "
                  f"filesz {s['filesz']:#x} memsz {s['memsz']:#x}")
        for name, n_type, desc in notes(f, segs):
            print(f"  note {name} type {n_type:#x} size {len(desc)}")


def vmcoreinfo(path):
    with open(path, "rb") as f:
        h = header(f)
        for name, _type, desc in notes(f, segments(f, h)):
            if name == "VMCOREINFO":
                sys.stdout.write(desc.rstrip(b"\0").decode())
                return 0
    sys.exit(f"elfcore.py: {path} has no VMCOREINFO note")


def phdrs_at_64(src, dst):
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        h = header(f)
        if h["phoff"] == 64:
            return 0
        f.seek(h["phoff"])
        table = f.read(h["phentsize"] * h["phnum"])
        end = h["phoff"] + len(table)
        first_data = min(s["offset"] for s in segments(f, h))
        if 64 + len(table) > first_data:
            sys.exit("elfcore.py: the program headers do not fit before the first segment's data")
        f.seek(0)
        head = bytearray(f.read(64))
        struct.pack_into("<QQ", head, 32, 64, 0)
        struct.pack_into("<6H", head, 52, 64, h["phentsize"], h["phnum"], 0, 0, 0)
        f.seek(0)
        f.write(bytes(head) + table + b"\0" * max(0, end - 64 - len(table)))
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "summary":
        return summary(argv[2])
    if len(argv) == 3 and argv[1] == "vmcoreinfo":
        return vmcoreinfo(argv[2])
    if len(argv) == 4 and argv[1] == "phdrs-at-64":
        return phdrs_at_64(argv[2], argv[3])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
