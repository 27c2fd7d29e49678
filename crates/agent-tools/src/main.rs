//! The `agent-tools` binary: the command line of [`agent_tools::cli`].

fn main() -> std::process::ExitCode {
    agent_tools::cli::main(std::env::args_os())
}
