//! Writes a synthetic vmcore: `synth PATH RAM_MIB [DATA_PERCENT [SEED]]`.

use std::time::Instant;

use vmdump_synth::{self as synth, SynthSpec};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: synth PATH RAM_MIB [DATA_PERCENT [SEED]]");
        std::process::exit(2);
    }
    let arg = |i: usize, default: u64| args.get(i).map_or(default, |s| s.parse().expect("a number"));
    let spec = SynthSpec {
        ram_bytes: arg(2, 64) << 20,
        data_percent: arg(3, 40) as u8,
        seed: arg(4, SynthSpec::default().seed),
        ..Default::default()
    };
    let start = Instant::now();
    let summary = synth::write(&spec, args[1].as_ref())?;
    println!(
        "{}: {} RAM pages ({} data, {} zero), max_pfn {:#x}, {} bytes, {:.2?}",
        args[1],
        summary.ram_pages,
        summary.data_pages,
        summary.zero_pages,
        summary.max_pfn,
        summary.file_size,
        start.elapsed()
    );
    Ok(())
}
