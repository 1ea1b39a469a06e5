use std::process::ExitCode;

fn main() -> ExitCode {
    duet::cli::main()
}
