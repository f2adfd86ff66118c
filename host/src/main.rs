//! The `vmdump` executable. Exit status: 0 success, 1 failure, 2 usage error.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = vmdump::cli::Cli::parse();
    match vmdump::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vmdump: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
