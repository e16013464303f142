use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("__pdf-worker")) {
        return zhi::extract::pdf_worker_main(&std::env::args_os().skip(2).collect::<Vec<_>>());
    }
    ExitCode::SUCCESS
}
