//! The `vmdump` executable. Exit status: 0 success, 1 failure, 2 usage
//! error, 3 dump complete but degraded (see `vmdump::cli`).

use clap::Parser;

fn main() -> std::process::ExitCode {
    // What starting the program touched (ld.so, libc's resolvers) goes
    // back to the page cache before the run begins (vmdump::resident).
    vmdump::resident::release_clean_file_pages();
    let args: Vec<String> = std::env::args().collect();
    let as_makedumpfile = args.first().is_some_and(|a| a.rsplit('/').next() == Some("makedumpfile"));
    let result = if as_makedumpfile {
        vmdump::cli::compat::run(&args[1..], &[])
    } else {
        vmdump::cli::run(vmdump::cli::Cli::parse())
    };
    match result {
        Ok(vmdump::cli::Outcome::Success) => std::process::ExitCode::SUCCESS,
        Ok(vmdump::cli::Outcome::Degraded) => std::process::ExitCode::from(3),
        Ok(vmdump::cli::Outcome::Incomplete) => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("vmdump: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
