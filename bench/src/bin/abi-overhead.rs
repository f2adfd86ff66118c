//! Per-page throughput of each compressor plugin through the C ABI (the
//! `.so` loaded by the host's loader, driven by the host's page encoder)
//! against the codec called directly, on a kernel-like page mix.
//!
//! Runs alternate (direct then ABI, ABI then direct, ...) and the fastest
//! run of each side is compared: on a shared machine, other work only ever
//! adds time, so the minimum is the least disturbed estimate of the cost.
//! Usage: abi-overhead [PLUGIN_DIR] (default: the executable's directory).

use std::path::PathBuf;
use std::sync::Arc;

use flate2::{Compress, Compression, FlushCompress};
use vmdump::codec::{Codec, Encoded};
use vmdump::plugin::load_compressor;
use vmdump_bench::{PAGE_SIZE, fastest, kernel_like_pages, system_zlib, timed};
use vmdump_sdk::Params;
use vmdump_sdk::client::StderrHost;

const PAGES: usize = 4096;
const ROUNDS: usize = 21;

/// A direct call of a codec: compresses one page, returns the size.
type Direct = Box<dyn FnMut(&[u8], &mut [u8]) -> usize>;

fn direct_codecs() -> Vec<(&'static str, &'static str, Direct)> {
    let mut deflate = Compress::new(Compression::new(1), true);
    let mut zstd = zstd::bulk::Compressor::new(1).expect("zstd context");
    zstd.include_contentsize(true).expect("zstd parameter");
    let mut snappy = snap::raw::Encoder::new();
    let mut system = system_zlib::Deflate::new(1);
    vec![
        ("zlib", "libvmdump_compress_zlib.so", Box::new(move |src: &[u8], dst: &mut [u8]| {
            deflate.reset();
            deflate.compress(src, dst, FlushCompress::Finish).expect("deflate");
            deflate.total_out() as usize
        })),
        ("zstd", "libvmdump_compress_zstd.so", Box::new(move |src: &[u8], dst: &mut [u8]| {
            zstd.compress_to_buffer(src, dst).expect("zstd")
        })),
        ("lzo", "libvmdump_compress_lzo.so", Box::new(|src: &[u8], dst: &mut [u8]| {
            let out = lzo1x::compress(src, lzo1x::CompressLevel::new(3));
            dst[..out.len()].copy_from_slice(&out);
            out.len()
        })),
        ("snappy", "libvmdump_compress_snappy.so", Box::new(move |src: &[u8], dst: &mut [u8]| {
            snappy.compress(src, dst).expect("snappy")
        })),
        ("c-zlib", "libvmdump_c_zlib.so", Box::new(move |src: &[u8], dst: &mut [u8]| system.compress(src, dst))),
    ]
}

fn main() {
    let dir = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| {
        std::env::current_exe().expect("own path").parent().expect("own directory").to_path_buf()
    });
    let pages = kernel_like_pages(PAGES, 7);
    let mib = (PAGES * PAGE_SIZE) as f64 / (1 << 20) as f64;
    println!("{PAGES} non-zero kernel-like pages ({mib:.0} MiB), {ROUNDS} alternating rounds, fastest run of each");
    println!("{:<8} {:>12} {:>12} {:>9} {:>12}", "plugin", "direct MiB/s", "ABI MiB/s", "ABI cost", "out bytes");
    for (name, file, mut direct) in direct_codecs() {
        let loaded = load_compressor(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
        let codec = Codec::new(&loaded, &Params::default(), Arc::new(StderrHost), PAGE_SIZE).expect("init");
        let mut encoder = codec.encoder();
        let mut dst = vec![0u8; codec.output_capacity()]; // what each worker gets
        let (mut direct_t, mut abi_t) = (Vec::new(), Vec::new());
        let (mut direct_bytes, mut abi_bytes) = (0, 0);
        for round in 0..ROUNDS {
            // Alternate which side goes first, so neither always runs on a warmer machine.
            for side in [round % 2, 1 - round % 2] {
                if side == 0 {
                    let (bytes, t) = timed(|| pages.iter().map(|p| direct(p, &mut dst).min(PAGE_SIZE)).sum::<usize>());
                    direct_bytes = bytes;
                    direct_t.push(t);
                } else {
                    let (bytes, t) = timed(|| pages.iter().map(|p| encoded_size(encoder.encode(p))).sum::<usize>());
                    abi_bytes = bytes;
                    abi_t.push(t);
                }
            }
        }
        assert_eq!(direct_bytes, abi_bytes, "{name}: the ABI path must do the same work");
        let (d, a) = (mib / fastest(&direct_t), mib / fastest(&abi_t));
        println!("{name:<8} {d:>12.1} {a:>12.1} {:>8.1}% {abi_bytes:>12}", (d / a - 1.0) * 100.0);
    }
}

fn encoded_size(encoded: Encoded<'_>) -> usize {
    match encoded {
        Encoded::Compressed(bytes, _) => bytes.len(),
        Encoded::Raw => PAGE_SIZE,
    }
}
