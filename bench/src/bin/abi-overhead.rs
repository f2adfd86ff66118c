//! Per-page throughput of each compressor plugin through the C ABI (the
//! `.so` loaded by the host's loader, driven by the host's page encoder, as
//! the dump engine drives it) against the codec crate called directly with
//! the same settings and the same output buffer, on a kernel-like page mix.
//!
//! Runs alternate (direct then ABI, ABI then direct, ...) and the fastest
//! run of each side is compared: on a shared machine, other work only ever
//! adds time, so the minimum is the least disturbed estimate of the cost.
//! Usage: abi-overhead [PLUGIN_DIR] (default: the executable's directory).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flate2::{Compress, Compression, FlushCompress};
use vmdump::codec::{Codec, Encoded};
use vmdump::plugin::load_compressor;
use vmdump_bench::{PAGE_SIZE, fastest, kernel_like_pages, system_zlib, timed};
use vmdump_sdk::Params;
use vmdump_sdk::client::StderrHost;

const PAGES: usize = 4096;
const ROUNDS: usize = 41;

fn main() {
    let dir = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        std::env::current_exe().expect("own path").parent().expect("own directory").to_path_buf()
    });
    let pages = kernel_like_pages(PAGES, 7);
    let mib = (PAGES * PAGE_SIZE) as f64 / (1 << 20) as f64;
    println!(
        "{PAGES} non-zero kernel-like pages ({mib:.0} MiB), {ROUNDS} alternating rounds, fastest run of each"
    );
    println!(
        "{:<8} {:>12} {:>12} {:>9} {:>12}",
        "plugin", "direct MiB/s", "ABI MiB/s", "ABI cost", "out bytes"
    );
    let bench = Bench { dir: &dir, pages: &pages, mib };

    let mut deflate = Compress::new(Compression::new(1), true);
    bench.run("zlib", "libvmdump_compress_zlib.so", |src, dst| {
        deflate.reset();
        deflate.compress(src, dst, FlushCompress::Finish).expect("deflate");
        deflate.total_out() as usize
    });
    let mut zstd = zstd::bulk::Compressor::new(1).expect("zstd context");
    zstd.include_contentsize(true).expect("zstd parameter");
    bench.run("zstd", "libvmdump_compress_zstd.so", |src, dst| {
        zstd.compress_to_buffer(src, dst).expect("zstd")
    });
    bench.run("lzo", "libvmdump_compress_lzo.so", |src, dst| {
        let out = lzo1x::compress(src, lzo1x::CompressLevel::new(3));
        dst[..out.len()].copy_from_slice(&out);
        out.len()
    });
    let mut snappy = snap::raw::Encoder::new();
    bench
        .run("snappy", "libvmdump_compress_snappy.so", |src, dst| snappy.compress(src, dst).expect("snappy"));
    let mut system = system_zlib::Deflate::new(1);
    bench.run("c-zlib", "libvmdump_c_zlib.so", |src, dst| system.compress(src, dst));
}

struct Bench<'a> {
    dir: &'a Path,
    pages: &'a [[u8; PAGE_SIZE]],
    mib: f64,
}

impl Bench<'_> {
    /// Times `direct` against the plugin in `file` and prints one row.
    fn run(&self, name: &str, file: &str, mut direct: impl FnMut(&[u8], &mut [u8]) -> usize) {
        let loaded = load_compressor(&self.dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
        let codec = Codec::new(&loaded, &Params::default(), Arc::new(StderrHost), PAGE_SIZE).expect("init");
        let mut encoder = codec.encoder();
        let mut dst = vec![0u8; codec.output_capacity()]; // what each worker gets
        let (mut direct_t, mut abi_t) = (Vec::new(), Vec::new());
        let (mut direct_bytes, mut abi_bytes) = (0, 0);
        for round in 0..ROUNDS {
            // Alternate which side goes first, so neither always runs on a warmer machine.
            for side in [round % 2, 1 - round % 2] {
                if side == 0 {
                    let (bytes, t) = timed(|| {
                        let mut total = 0;
                        for page in self.pages {
                            total += direct(page, &mut dst).min(PAGE_SIZE);
                        }
                        total
                    });
                    direct_bytes = bytes;
                    direct_t.push(t);
                } else {
                    let (bytes, t) = timed(|| {
                        let mut total = 0;
                        for page in self.pages {
                            total += match encoder.encode(page) {
                                Encoded::Compressed(bytes, _) => bytes.len(),
                                Encoded::Raw => PAGE_SIZE,
                            };
                        }
                        total
                    });
                    abi_bytes = bytes;
                    abi_t.push(t);
                }
            }
        }
        assert_eq!(direct_bytes, abi_bytes, "{name}: the ABI path must do the same work");
        let (d, a) = (self.mib / fastest(&direct_t), self.mib / fastest(&abi_t));
        println!("{name:<8} {d:>12.1} {a:>12.1} {:>8.1}% {abi_bytes:>12}", (d / a - 1.0) * 100.0);
    }
}
