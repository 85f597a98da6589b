fn main() -> std::process::ExitCode {
    switchboard::run_cli()
}
