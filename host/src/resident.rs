//! Gives back the pages of the process's own files that a phase of the run
//! touched: a capture kernel's memory is small and counted by hand, and
//! every page of code mapped counts in it.
//!
//! The kernel maps a file's pages 64 KiB around each one a process touches
//! ("fault-around"), so starting a program maps most of libc (ld.so
//! relocates it and runs its CPU-feature resolvers, scattered through its
//! 1.9 MB) and much of vmdump's own code and read-only data: about 2 MiB
//! before a dump reads its first page, of which the dump itself runs a
//! fraction. Unmapping a clean private file mapping loses nothing: its
//! pages are the file's, still in the page cache, and the next touch maps
//! them again (with the 64 KiB around them). So at the start of each phase
//! ([`release_clean_file_pages`]: when `main` begins, before each pass
//! over the pages) what the phases before it touched goes, and the peak is
//! that of the largest phase, not the sum of all of them.
//!
//! Clean means: mapped from a file, private, not writable, and holding no
//! anonymous (copied-on-write) page, as `/proc/self/smaps` reports each
//! mapping. That leaves out the data and GOT pages ld.so wrote, which only
//! the process holds, the shared mappings of the input, and the stack
//! and heap.
#![allow(unsafe_code)]

use std::io::{BufRead, BufReader};

/// Unmaps the resident pages of every clean file mapping of the process
/// (see the module's documentation); they come back on their next touch.
/// Only a hint: where `/proc/self/smaps` cannot be read, or `madvise`
/// fails, nothing changes.
pub fn release_clean_file_pages() {
    let Ok(smaps) = std::fs::File::open("/proc/self/smaps") else { return };
    for range in clean_file_mappings(BufReader::with_capacity(4096, smaps)) {
        // SAFETY: `range` is a whole mapping of this process that is mapped
        // from a file, private and not writable, and holds no anonymous page
        // (`clean_file_mappings`): every resident page is the file's own,
        // in the page cache. MADV_DONTNEED unmaps them; the next access to
        // an address maps the same bytes from the file again, so no
        // reference into the range sees a change. vmdump changes no
        // mapping's protection, so none becomes writable between the read of
        // smaps and this call.
        unsafe {
            libc::madvise(range.start as *mut libc::c_void, range.end - range.start, libc::MADV_DONTNEED);
        }
    }
}

/// Gives the heap's free memory back to the kernel: once a pass over the
/// pages has ended, its slots and its workers' contexts are free but still
/// resident in malloc's arenas (one a worker thread), and the phases after
/// it would otherwise add their own on top of them. glibc's `malloc_trim`
/// does it for every arena; elsewhere nothing changes.
pub fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer and touches no allocation in
    // use: it hands the pages of malloc's free chunks back to the kernel
    // (MADV_DONTNEED) under malloc's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The address ranges of the clean file mappings listed by `smaps` (the
/// format of `/proc/PID/smaps`).
fn clean_file_mappings(smaps: impl BufRead) -> Vec<std::ops::Range<usize>> {
    let mut clean = Vec::new();
    let mut candidate: Option<std::ops::Range<usize>> = None;
    for line in smaps.lines().map_while(Result::ok) {
        if let Some(mapping) = Mapping::parse(&line) {
            candidate = mapping.is_private_read_only_file().then_some(mapping.range);
        } else if let Some(kib) = line.strip_prefix("Anonymous:") {
            // The last of a mapping's fields that decides: keep the range
            // only when no page was copied on write.
            if let Some(range) = candidate.take()
                && kib.trim().trim_end_matches("kB").trim() == "0"
            {
                clean.push(range);
            }
        }
    }
    clean
}

/// A mapping's header line in smaps: `start-end perms offset dev inode path`.
struct Mapping<'a> {
    range: std::ops::Range<usize>,
    perms: &'a str,
    inode: &'a str,
    path: &'a str,
}

impl<'a> Mapping<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        let mut fields = line.split_ascii_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let range = usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?;
        let perms = fields.next()?;
        let (_offset, _dev, inode) = (fields.next()?, fields.next()?, fields.next()?);
        let path = fields.next().unwrap_or("");
        (perms.len() == 4).then_some(Self { range, perms, inode, path })
    }

    fn is_private_read_only_file(&self) -> bool {
        let perms = self.perms.as_bytes();
        perms[1] != b'w' && perms[3] == b'p' && self.inode != "0" && self.path.starts_with('/')
    }
}

#[cfg(test)]
mod tests {
    use super::clean_file_mappings;

    const SMAPS: &str = "\
00400000-00800000 r-xp 00000000 08:01 1234 /usr/sbin/vmdump
Rss:                 512 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00800000-00810000 r--p 00400000 08:01 1234 /usr/sbin/vmdump
Rss:                  64 kB
Anonymous:            64 kB
VmFlags: rd mr mw me ac
00810000-00820000 rw-p 00410000 08:01 1234 /usr/sbin/vmdump
Anonymous:             0 kB
7f0000000000-7f0000100000 r--s 00000000 00:05 99 /proc/vmcore
Anonymous:             0 kB
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
Anonymous:            12 kB
7f0000400000-7f0000500000 r-xp 00028000 08:01 777 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 900 kB
Anonymous:             0 kB
7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                          [vdso]
Anonymous:             0 kB
";

    #[test]
    fn only_clean_private_read_only_file_mappings_are_released() {
        let clean = clean_file_mappings(SMAPS.as_bytes());
        assert_eq!(clean, vec![0x0040_0000..0x0080_0000, 0x7f00_0040_0000..0x7f00_0050_0000]);
    }

    #[test]
    fn a_mapping_without_its_anonymous_field_is_kept() {
        let smaps = "00400000-00800000 r-xp 00000000 08:01 1234 /bin/x\nRss: 4 kB\n";
        assert!(clean_file_mappings(smaps.as_bytes()).is_empty());
    }

    /// A file of `pages` 4 KiB pages, each filled with its index.
    fn patterned_file(pages: usize) -> (std::fs::File, Vec<u8>) {
        let bytes: Vec<u8> = (0..pages * 4096).map(|i| (i / 4096) as u8).collect();
        let mut file = unlinked_file();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        (file, bytes)
    }

    /// A file of its own, unlinked, in the temporary directory (0600).
    fn unlinked_file() -> std::fs::File {
        use std::os::unix::fs::OpenOptionsExt as _;
        let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_alphanumeric(), "");
        let path = std::env::temp_dir().join(format!("vmdump-resident-{}-{thread}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }

    /// The resident KiB of this process's mapping that begins at `start`.
    fn resident_kib(start: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let header = format!("{start:x}-");
        let from = smaps.lines().position(|l| l.starts_with(&header)).expect("the mapping is listed");
        let rss = smaps.lines().skip(from).find_map(|l| l.strip_prefix("Rss:")).unwrap();
        rss.trim().trim_end_matches("kB").trim().parse().unwrap()
    }

    #[test]
    fn a_clean_file_mapping_gives_its_pages_back_and_reads_the_same() {
        let (file, bytes) = patterned_file(64);
        // Private and read-only, as ld.so maps code and read-only data.
        // SAFETY: the file is this test's own, unlinked: nothing changes it.
        let map = unsafe { memmap2::MmapOptions::new().map_copy_read_only(&file) }.unwrap();
        assert_eq!(&map[..], &bytes[..]);
        let start = map.as_ptr() as usize;
        assert!(resident_kib(start) > 0);
        super::release_clean_file_pages();
        assert_eq!(resident_kib(start), 0);
        assert_eq!(&map[..], &bytes[..]);
    }

    #[test]
    fn a_private_mapping_written_then_made_read_only_keeps_what_was_written() {
        let (file, mut bytes) = patterned_file(16);
        // SAFETY: as above; the copy's writes stay in this process.
        let mut copy = unsafe { memmap2::MmapOptions::new().map_copy(&file) }.unwrap();
        copy[5 * 4096] = 0xee;
        bytes[5 * 4096] = 0xee;
        // As ld.so leaves the pages it relocated: read-only, copied on write.
        let map = copy.make_read_only().unwrap();
        super::release_clean_file_pages();
        assert!(resident_kib(map.as_ptr() as usize) > 0);
        assert_eq!(&map[..], &bytes[..]);
    }
}
