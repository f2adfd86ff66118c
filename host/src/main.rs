//! The `vmdump` executable. Exit status: 0 success, 1 failure, 2 usage
//! error, 3 dump complete but degraded (see `vmdump::cli`).

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = vmdump::cli::Cli::parse();
    match vmdump::cli::run(cli) {
        Ok(vmdump::cli::Outcome::Success) => std::process::ExitCode::SUCCESS,
        Ok(vmdump::cli::Outcome::Degraded) => std::process::ExitCode::from(3),
        Ok(vmdump::cli::Outcome::Incomplete) => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("vmdump: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
