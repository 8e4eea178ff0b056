//! The kvmark binary: parse, dispatch, exit status.

use std::process::ExitCode;

use kvmark::cli::ParseError;

fn main() -> ExitCode {
    match kvmark::cli::parse_from(std::env::args_os()) {
        Ok(cli) => kvmark::app::main(cli),
        Err(ParseError::Clap(e)) => e.exit(),
        Err(ParseError::Config(e)) => {
            eprintln!("kvmark: error: {e}");
            ExitCode::from(kvmark::app::EXIT_USAGE)
        }
    }
}

// mimalloc scales across threads (cross-thread frees are common here: a value written
// by one worker is replaced by another) and is what the build probe reports.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
