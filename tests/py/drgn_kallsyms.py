"""Lists the vmlinux symbols drgn reads from a dump's kallsyms
(drgn.helpers.linux.kallsyms.load_vmlinux_kallsyms), in kallsyms' order:
address, binding, kind, name. Usage: drgn_kallsyms.py DUMP"""
import sys

import drgn
from drgn.helpers.linux.kallsyms import load_vmlinux_kallsyms


def main():
    prog = drgn.Program()
    prog.set_core_dump(sys.argv[1])
    index = load_vmlinux_kallsyms(prog)
    lines = (f"{s.address:016x} {s.binding.name} {s.kind.name} {s.name}\n" for s in index(prog, None, None, False))
    sys.stdout.writelines(lines)


main()
