fn main() -> std::process::ExitCode {
    switchboard::cli::main()
}
