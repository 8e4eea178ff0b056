//! The kvmark binary: parse, dispatch, exit status.

use clap::Parser;

fn main() -> std::process::ExitCode {
    kvmark::app::main(kvmark::cli::Cli::parse())
}

// mimalloc scales across threads (cross-thread frees are common here: a value written
// by one worker is replaced by another) and is what the build probe reports.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
