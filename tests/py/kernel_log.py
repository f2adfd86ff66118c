#!/usr/bin/python3
"""Kernel logs as makedumpfile's releases print them, and the kernel lines
of a serial console, for the judges.

makedumpfile 1.7.5 and later (and vmdump) print the caller of each message,
`[      T0] ` after the timestamp, where the kernel records it; 1.7.4 and
older, Debian 12's 1.7.2 among them, print none (the same helper in Rust:
tests/support/kernel_log.rs).
"""
import re

# A record's first line: the timestamp, the caller column, the text.
RECORD = re.compile(rb"^(\[ *\d+\.\d{6}\] )(\[ *[TC]\d+\] )?(.*)$")
# A kernel line on the console: `[    1.234567] text`, or with the
# console's caller column `[    1.234567][    T1] text`.
CONSOLE = re.compile(rb"^\[ *(\d+\.\d{6})\](?:\[ *[TC]\d+\])? (.*)$")


def without_caller_ids(log):
    """The log (bytes) without the caller column and as many spaces of each
    record's continuation lines: what makedumpfile 1.7.4 and older print."""
    out, width = [], 0
    for line in log.split(b"\n"):
        m = RECORD.match(line)
        if m and m[2]:
            width = len(m[2])
            out.append(m[1] + m[3])
        elif line.startswith(b" "):
            spaces = len(line) - len(line.lstrip(b" "))
            out.append(line[min(width, spaces):])
        else:
            out.append(line)
    return b"\n".join(out)


def prints_caller_ids(version_line):
    """Whether the makedumpfile of `makedumpfile -v`'s first line prints
    caller ids (1.7.5 and later; upstream's master says 1.7.9++)."""
    m = re.search(r"version (\d+)\.(\d+)\.(\d+)", version_line)
    return bool(m) and tuple(map(int, m.groups())) >= (1, 7, 5)


def log_lines(log):
    """{(timestamp, line)} of every line of a makedumpfile-style log: a
    record's continuation lines with the record's timestamp; spaces around
    each line stripped (the console indents continuation lines otherwise)."""
    lines, stamp = set(), None
    for line in log.split(b"\n"):
        m = RECORD.match(line)
        if m:
            stamp = m[1].strip(b"[] ").decode()
            lines.add((stamp, m[3].strip(b" ")))
        elif stamp is not None and line.startswith(b" "):
            lines.add((stamp, line.strip(b" ")))
    return lines


def first_kernel_console_lines(serial):
    """(timestamp, text) of the kernel lines the crashed kernel printed on
    the console: from the start of the serial log to the capture kernel's
    "Linux version" line. Lines a user-space write broke into (CAPTURE:)
    and lines with bytes the log would escape are left out."""
    lines, boots = [], 0
    for raw in serial.split(b"\n"):
        m = CONSOLE.match(raw.rstrip(b"\r"))
        if not m:
            continue
        if m[2].startswith(b"Linux version "):
            boots += 1
            if boots == 2:
                break
        text = m[2].strip(b" \r")
        if b"CAPTURE:" in text or any(b < 0x20 or b > 0x7e for b in text):
            continue
        lines.append((m[1].decode(), text))
    return lines
