//! Running helper programs (the PDF worker, `pdftotext`, `pdftoppm`, `tesseract`) so that none
//! of them can hang, flood or outlive an extraction: a wall-clock limit, a cap on what is read
//! from them, cancellation, and a kill that is always followed by a wait (no zombies).
//!
//! Nothing here interprets what a program printed; callers decide what an exit means.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The last this many bytes of a helper's stderr are kept: that is where dying programs say why.
const STDERR_KEEP: usize = 64 << 10;

/// Why [`run`] stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The program ended by itself.
    Exited,
    /// It ran past its time limit and was killed.
    TimedOut,
    /// It printed more than the cap and was killed.
    OutputTooLarge,
    /// The caller cancelled; it was killed.
    Cancelled,
}

#[derive(Debug)]
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// The tail of stderr, at most [`STDERR_KEEP`] bytes.
    pub stderr: Vec<u8>,
    pub end: End,
}

impl Finished {
    /// The last non-empty line of stderr, cleaned for a message.
    pub(crate) fn stderr_tail(&self) -> String {
        let text = String::from_utf8_lossy(&self.stderr);
        let line = text
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("");
        let line = crate::sanitize::one_line(line);
        match line.char_indices().nth(300) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line,
        }
    }
}

/// Writes a helper's stdin, from a thread of its own, while the helper runs.
pub(crate) type Feed = Box<dyn FnOnce(&mut dyn Write) + Send>;

/// Run `cmd` to its end, or until `timeout`, more than `stdout_cap` bytes of output, or
/// cancellation. Stdin is closed. Errors only when the program cannot be started.
pub(crate) fn run(
    cmd: Command,
    timeout: Duration,
    stdout_cap: usize,
    cancel: Option<&CancellationToken>,
) -> io::Result<Finished> {
    run_fed(cmd, None, timeout, stdout_cap, cancel)
}

/// [`run`], with stdin written by `feed` (then closed) while the program runs. The feeding
/// thread is not waited for: it ends when `feed` returns or its writes fail.
pub(crate) fn run_fed(
    mut cmd: Command,
    feed: Option<Feed>,
    timeout: Duration,
    stdout_cap: usize,
    cancel: Option<&CancellationToken>,
) -> io::Result<Finished> {
    use std::os::unix::process::CommandExt;
    // A group of its own, so a kill reaches whatever the program started too (otherwise a
    // grandchild holding the pipes open would keep the readers waiting).
    cmd.stdin(if feed.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .process_group(0);
    let mut child = cmd.spawn()?;
    if let (Some(feed), Some(mut stdin)) = (feed, child.stdin.take()) {
        thread::spawn(move || {
            block_sigpipe();
            feed(&mut stdin);
        });
    }
    let group = child.id() as libc::pid_t;
    let overflow = Arc::new(AtomicBool::new(false));

    let stdout_reader = child.stdout.take().map(|out| {
        let overflow = Arc::clone(&overflow);
        thread::spawn(move || read_capped(out, stdout_cap, &overflow))
    });
    let stderr_reader = child
        .stderr
        .take()
        .map(|err| thread::spawn(move || read_tail(err)));

    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    let (status, end) = loop {
        if let Some(status) = child.try_wait()? {
            break (status, End::Exited);
        }
        let end = if overflow.load(Ordering::SeqCst) {
            Some(End::OutputTooLarge)
        } else if started.elapsed() >= timeout {
            Some(End::TimedOut)
        } else if cancel.is_some_and(|c| c.is_cancelled()) {
            Some(End::Cancelled)
        } else {
            None
        };
        if let Some(end) = end {
            // SAFETY: kill(2) with the negated id of the group this child leads; the child is
            // not yet reaped, so the id cannot have been reused.
            unsafe {
                libc::kill(-group, libc::SIGKILL);
            }
            // The child may have just exited on its own; kill then fails harmlessly.
            let _ = child.kill();
            break (child.wait()?, end);
        }
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    // The pipes close when the child is gone, so the readers end.
    let stdout = stdout_reader
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    let stderr = stderr_reader
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    // Output that overflowed is only noticed by the poll loop if the child is still running.
    let end = if end == End::Exited && overflow.load(Ordering::SeqCst) {
        End::OutputTooLarge
    } else {
        end
    };
    Ok(Finished {
        status,
        stdout,
        stderr,
        end,
    })
}

/// A program's stdout, read until it ends or would pass `cap` bytes (then `overflow` is set and
/// reading stops, so the poll loop ends the program).
fn read_capped(mut out: impl Read, cap: usize, overflow: &AtomicBool) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 << 10];
    loop {
        match out.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) if buf.len() + n > cap => {
                overflow.store(true, Ordering::SeqCst);
                break;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    buf
}

/// A program's stderr, read to its end keeping only the last [`STDERR_KEEP`] bytes: the end of
/// a long complaint is what says what went wrong.
fn read_tail(mut err: impl Read) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 << 10];
    loop {
        match err.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > 2 * STDERR_KEEP {
                    buf.drain(..buf.len() - STDERR_KEEP);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    if buf.len() > STDERR_KEEP {
        buf.drain(..buf.len() - STDERR_KEEP);
    }
    buf
}

/// A write to a program that has already exited must fail with EPIPE in this thread, not end
/// the whole process (zhi restores SIGPIPE's default so that `zhi … | head` ends quietly). A
/// SIGPIPE raised by this thread's writes stays pending on it and is dropped when it ends.
fn block_sigpipe() {
    // SAFETY: sigemptyset/sigaddset fill a set on this stack; pthread_sigmask changes only the
    // calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// The full path of `program` found on `PATH`, if it is there and executable.
pub(crate) fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A `Command` for `program` with `args`.
pub(crate) fn command<I, S>(program: &Path, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(program);
    cmd.args(args);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        command(Path::new("/bin/sh"), ["-c", script])
    }

    #[test]
    fn collects_output_and_status() {
        let done = run(
            sh("echo out; echo err >&2; exit 3"),
            Duration::from_secs(10),
            1024,
            None,
        )
        .unwrap();
        assert_eq!(done.end, End::Exited);
        assert_eq!(done.status.code(), Some(3));
        assert_eq!(done.stdout, b"out\n");
        assert_eq!(done.stderr_tail(), "err");
    }

    #[test]
    fn kills_on_timeout() {
        let done = run(sh("sleep 30"), Duration::from_millis(100), 1024, None).unwrap();
        assert_eq!(done.end, End::TimedOut);
        assert!(!done.status.success());
    }

    #[test]
    fn kills_a_flood() {
        let done = run(sh("yes"), Duration::from_secs(30), 1 << 20, None).unwrap();
        assert_eq!(done.end, End::OutputTooLarge);
        assert!(done.stdout.len() <= 1 << 20);
    }

    #[test]
    fn cancellation_kills() {
        let token = CancellationToken::new();
        token.cancel();
        let done = run(sh("sleep 30"), Duration::from_secs(30), 1024, Some(&token)).unwrap();
        assert_eq!(done.end, End::Cancelled);
    }

    #[test]
    fn feeds_stdin() {
        let feed: Feed = Box::new(|w| {
            let _ = w.write_all(b"fed\n");
        });
        let done = run_fed(
            sh("read x; echo \"got $x\""),
            Some(feed),
            Duration::from_secs(10),
            1024,
            None,
        )
        .unwrap();
        assert_eq!(done.stdout, b"got fed\n");
    }

    #[test]
    fn feeding_a_program_that_has_exited_does_not_end_this_process() {
        // SIGPIPE at its default disposition, as in the zhi binary.
        // SAFETY: changing a signal's disposition; no handler is installed.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let feed: Feed = Box::new(move |w| {
            std::thread::sleep(Duration::from_millis(200));
            let result = w.write_all(&[b'x'; 1 << 16]).and_then(|()| w.flush());
            let _ = tx.send(result.map_err(|e| e.kind()));
        });
        let done = run_fed(
            sh("exit 0"),
            Some(feed),
            Duration::from_secs(10),
            1024,
            None,
        )
        .unwrap();
        assert_eq!(done.end, End::Exited);
        let written = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(written, Err(io::ErrorKind::BrokenPipe));
    }

    #[test]
    fn finds_programs_on_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("zhi-no-such-program").is_none());
    }
}
