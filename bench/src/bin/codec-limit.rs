//! What a codec alone needs to compress the pages a dump keeps: the limit
//! a one-core dump is held to (a dump within 1.15x of it spends its time
//! compressing), and with `--deflate` the deflate encoders that could write
//! the `-c` pages, against the system zlib at level 1 (makedumpfile's).
//!
//! The pages come from DUMP, a kdump file of raw pages, i.e. a dump made
//! without compression at the level wanted: `vmdump makedumpfile -d 31
//! VMCORE DUMP` keeps exactly the pages a `-c -d 31` or `-l -d 31` run
//! compresses. Every page is compressed once per round, single-threaded,
//! with the dump's own rule (a page that does not shrink is stored raw, at
//! its full size); each row is the fastest of ROUNDS rounds, run after the
//! pages are in memory. Zero pages are left out: a dump stores them as one
//! shared page (or excludes them) without calling the codec.
//!
//! Usage: codec-limit [--deflate | --only CODEC | --efforts LIST]
//!                    [--plugin FILE[,key=value...]]... DUMP
//!   --efforts: the page encoder of the built-in zlib at each effort of LIST
//!   ("depth/nice/insert_limit[/skip],...", without skip none; or
//!   "libdeflateN" for libdeflate's level N, "zlibN" for the system
//!   zlib's), in interleaved rounds (every encoder once a round, fastest
//!   of 15), so that a busy machine slows all of them alike: for tuning.
//!   without --deflate: the codecs `zlib`, `lzo`, `snappy`, `zstd` (or the
//!   one of --only) as a dump finds them (files on the plugin path, else
//!   built in), with their default parameters, through the host's page
//!   encoder, which skips random-looking pages for zlib as a dump does;
//!   --plugin: a compressor file too, with its parameters (an ISA-L zlib).

use std::path::Path;
use std::sync::Arc;

use flate2::{Compress, Compression, FlushCompress};
use vmdump::codec::{Codec, Encoded};
use vmdump::plugin::{LoadedCompressor, SearchPath, find_compressor, load_compressor};
use vmdump_bench::{PAGE_SIZE, fastest, system_zlib, timed};
use vmdump_compress_zlib::deflate::{Effort, PageDeflate};
use vmdump_compress_zlib::page_effort;
use vmdump_format::kdump::reader::{KdumpReader, StoredPage};
use vmdump_sdk::Params;
use vmdump_sdk::client::StderrHost;

const ROUNDS: usize = 5;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut deflate, mut plugins, mut dump, mut efforts) = (false, Vec::new(), None, None);
    let mut codecs = vec!["zlib".to_owned(), "lzo".into(), "snappy".into(), "zstd".into()];
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--deflate" => deflate = true,
            "--plugin" => plugins.push(args.next().expect("--plugin FILE[,key=value...]")),
            "--efforts" => efforts = Some(args.next().expect("--efforts LIST")),
            "--only" => codecs = vec![args.next().expect("--only CODEC")],
            _ => dump = Some(arg),
        }
    }
    let dump = dump.expect("usage: codec-limit [--deflate] [--plugin FILE[,k=v...]]... DUMP");
    let pages = kept_pages(Path::new(&dump));
    let mib = pages.len() as f64 / f64::from(1 << 20);
    let count = pages.len() / PAGE_SIZE;
    println!("{dump}: {count} kept pages ({mib:.1} MiB), fastest of {ROUNDS} rounds, one thread");
    println!("{:<28} {:>9} {:>9} {:>14} {:>7}", "codec", "seconds", "MiB/s", "output bytes", "ratio");
    let mut table = Table { pages: &pages, mib, baseline: None };
    if let Some(efforts) = efforts {
        interleaved(&table, &efforts);
    } else if deflate {
        deflate_candidates(&mut table);
    } else {
        let path = SearchPath::from_process(&[], &[]);
        for name in &codecs {
            let (found, _) = find_compressor(&path, name);
            let found = found.unwrap_or_else(|| panic!("no compressor `{name}`"));
            println!("{name}: {}", found.origin);
            table.through_host(name, &found, &Params::default());
        }
    }
    for spec in &plugins {
        let mut words = spec.split(',');
        let file = words.next().expect("a file");
        let params = Params::new(words.map(|kv| kv.split_once('=').expect("key=value")));
        let loaded = load_compressor(Path::new(file)).unwrap_or_else(|e| panic!("{e}"));
        table.through_host(spec, &loaded, &params);
    }
}

/// The deflate encoders, each at the levels worth a row.
fn deflate_candidates(table: &mut Table) {
    let mut system = system_zlib::Deflate::new(1);
    table.baseline = Some(table.row("system zlib 1 (makedumpfile)", |src, dst| system.compress(src, dst)));
    for level in [2, 3] {
        let mut system = system_zlib::Deflate::new(level);
        table.row(&format!("system zlib {level}"), |src, dst| system.compress(src, dst));
    }
    for level in [1, 2, 3, 4, 6] {
        let mut deflate = Compress::new(Compression::new(level), true);
        table.row(&format!("zlib-rs {level}"), |src, dst| {
            deflate.reset();
            deflate.compress(src, dst, FlushCompress::Finish).expect("deflate");
            deflate.total_out() as usize
        });
    }
    for level in [1, 2] {
        let mut encoder = PageDeflate::<4096>::new(page_effort(level).expect("a level of the page encoder"));
        table.row(&format!("vmdump page encoder {level}"), |src, dst| {
            encoder.compress(src, dst).expect("output fits the bound")
        });
    }
    for level in [1, 2, 3, 4, 5, 6, 9] {
        let lvl = libdeflater::CompressionLvl::new(level).expect("a libdeflate level");
        let mut libdeflate = libdeflater::Compressor::new(lvl);
        table.row(&format!("libdeflate {level}"), |src, dst| {
            libdeflate.zlib_compress(src, dst).expect("libdeflate output fits the bound")
        });
    }
}

/// A deflate encoder of one page into a buffer that fits any output.
type PageEncoder = Box<dyn FnMut(&[u8], &mut [u8]) -> usize>;

/// The encoders of `efforts` (see the usage), timed in interleaved rounds.
fn interleaved(table: &Table, efforts: &str) {
    let mut encoders: Vec<(&str, PageEncoder)> =
        efforts.split(',').map(|spec| (spec, encoder(spec))).collect();
    let mut dst = vec![0u8; 2 * PAGE_SIZE];
    let mut best = vec![f64::MAX; encoders.len()];
    let mut bytes = vec![0usize; encoders.len()];
    for _ in 0..15 {
        for (i, (_, encode)) in encoders.iter_mut().enumerate() {
            let (total, t) = timed(|| {
                table.pages.chunks_exact(PAGE_SIZE).map(|page| encode(page, &mut dst).min(PAGE_SIZE)).sum()
            });
            (bytes[i], best[i]) = (total, best[i].min(t));
        }
    }
    println!("(speed: against the first row)");
    for (i, (name, _)) in encoders.iter().enumerate() {
        println!(
            "{name:<28} {:>9.3} {:>8.3}x {:>14} {:>7.4}",
            best[i],
            best[0] / best[i],
            bytes[i],
            bytes[i] as f64 / bytes[0] as f64
        );
    }
}

fn encoder(spec: &str) -> PageEncoder {
    if let Some(level) = spec.strip_prefix("zlib") {
        let mut system = system_zlib::Deflate::new(level.parse().expect("a level"));
        return Box::new(move |src, dst| system.compress(src, dst));
    }
    if let Some(level) = spec.strip_prefix("libdeflate") {
        let level =
            libdeflater::CompressionLvl::new(level.parse().expect("a level")).expect("a libdeflate level");
        let mut libdeflate = libdeflater::Compressor::new(level);
        return Box::new(move |src, dst| libdeflate.zlib_compress(src, dst).expect("output fits the bound"));
    }
    let number = |s: &str| s.parse().expect("depth/nice/insert_limit[/skip]");
    let v: Vec<usize> = spec.split('/').map(number).collect();
    let effort = Effort {
        depth: v[0] as u32,
        nice: v[1],
        insert_limit: v[2],
        skip: v.get(3).map_or(Effort::NEVER_SKIP, |&s| s as u32),
    };
    let mut page = PageDeflate::<4096>::new(effort);
    Box::new(move |src, dst| page.compress(src, dst).expect("output fits the bound"))
}

/// The pages stored in `dump`, one after another.
fn kept_pages(dump: &Path) -> Vec<u8> {
    let file = std::fs::File::open(dump).unwrap_or_else(|e| panic!("{}: {e}", dump.display()));
    let reader = KdumpReader::open(file).unwrap_or_else(|e| panic!("{}: {e}", dump.display()));
    assert_eq!(reader.block_size() as usize, PAGE_SIZE, "a dump of 4 KiB pages");
    let mut pages = Vec::new();
    for item in reader.dumpable_pfns() {
        let (pfn, rank) = item.expect("the 2nd bitmap reads");
        match reader.page_at(pfn, rank).expect("the page reads") {
            StoredPage::Stored { desc, bytes } => {
                assert_eq!(desc.flags, 0, "pfn {pfn:#x} is compressed: make DUMP without -c/-l/-p/-z");
                // A dump finds zero pages before any codec sees them.
                if bytes.iter().any(|&b| b != 0) {
                    pages.extend_from_slice(&bytes);
                }
            }
            other => panic!("pfn {pfn:#x} is not stored: {other:?}"),
        }
    }
    pages
}

/// Prints rows of one page set.
struct Table<'a> {
    pages: &'a [u8],
    mib: f64,
    /// Output bytes the ratio column divides by.
    baseline: Option<usize>,
}

impl Table<'_> {
    /// Times `compress` (dst is large enough for any page) on every page,
    /// prints a row and returns the output bytes.
    fn row(&self, name: &str, mut compress: impl FnMut(&[u8], &mut [u8]) -> usize) -> usize {
        let mut dst = vec![0u8; 2 * PAGE_SIZE];
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..ROUNDS {
            let (total, t) = timed(|| {
                self.pages.chunks_exact(PAGE_SIZE).map(|page| compress(page, &mut dst).min(PAGE_SIZE)).sum()
            });
            bytes = total;
            times.push(t);
        }
        let t = fastest(&times);
        let ratio = self.baseline.map_or(String::new(), |b| format!("{:.4}", bytes as f64 / b as f64));
        println!("{name:<28} {t:>9.3} {:>9.1} {bytes:>14} {ratio:>7}", self.mib / t);
        bytes
    }

    /// A row for `plugin` driven as a dump drives it: the host's encoder.
    fn through_host(&self, name: &str, plugin: &LoadedCompressor, params: &Params) -> usize {
        let codec = Codec::new(plugin, params, Arc::new(StderrHost), PAGE_SIZE).expect("init");
        let skip_random = vmdump::profile::CompressSection::default().skips_random_pages(plugin.info.format);
        let codec = codec.skipping_random_pages(skip_random);
        let mut encoder = codec.encoder();
        self.row(name, |page, _| match encoder.encode(page) {
            Encoded::Compressed(bytes, _) => bytes.len(),
            Encoded::Raw => PAGE_SIZE,
        })
    }
}
