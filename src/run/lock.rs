//! One run per output folder. The lock is a file created with `create_new` (atomic), holding
//! the owner's pid and start time; a lock whose process is gone is stale and taken over.

use super::error::RunError;
use crate::layout::OutputLayout;
use crate::small_file::ReadError;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The lock files this process holds. A lock naming our own pid that we do not hold was left
/// by an earlier process that had the same pid — a restarted container's zhi is often pid 1 —
/// and is stale.
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Serialize, Deserialize)]
struct Holder {
    pid: u32,
    started_at: String,
    run_id: String,
    /// The machine the holder runs on: a pid means nothing on another host (a shared volume).
    #[serde(default)]
    host: Option<String>,
}

/// This machine's name.
fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned()).filter(|h| !h.is_empty())
}

/// The most of an existing lock file read; a real one is about a hundred bytes.
const MAX_LOCK_BYTES: u64 = 64 << 10;

/// Held for the life of a run; removed on drop.
#[derive(Debug)]
pub(crate) struct RunLock {
    path: PathBuf,
}

impl RunLock {
    /// Take the lock of `<out>/.zhi/lock`, or fail with exit 75 naming the holder.
    pub(crate) fn acquire(layout: &OutputLayout, run_id: &str) -> Result<RunLock, RunError> {
        let path = layout.lock();
        let zhi_dir = layout.zhi_dir();
        let me = Holder {
            pid: std::process::id(),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            run_id: run_id.to_string(),
            host: hostname(),
        };
        for _ in 0..3 {
            // Created in `.zhi` reached beneath the output folder's handle, never through a
            // link (a new file only, as `create_new` makes it).
            let created = layout.folder(zhi_dir, false).and_then(|folder| {
                folder
                    .top()
                    .create_new_file(path.file_name().unwrap_or_default(), 0o666)
            });
            match created {
                Ok(mut f) => {
                    let body = serde_json::to_vec(&me).unwrap_or_default();
                    f.write_all(&body)
                        .and_then(|_| f.sync_all())
                        .map_err(|source| RunError::WriteLock {
                            path: path.clone(),
                            source,
                        })?;
                    held().push(path.clone());
                    return Ok(RunLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    match read_holder(&path)? {
                        Existing::Gone => continue,
                        Existing::Holder(h) => take_over_or_refuse(&path, zhi_dir, &me, h)?,
                        Existing::Garbled => wait_or_clear(&path),
                    }
                }
                Err(source) => return Err(RunError::Create { path, source }),
            }
        }
        Err(RunError::LockContended { path })
    }
}

/// What an existing lock file says.
enum Existing {
    /// Released between our create and our read.
    Gone,
    Holder(Holder),
    /// Empty, too large or unreadable.
    Garbled,
}

fn read_holder(path: &Path) -> Result<Existing, RunError> {
    let bytes = match crate::small_file::read(path, MAX_LOCK_BYTES) {
        Ok(b) => b,
        Err(ReadError::NotFound) if std::fs::symlink_metadata(path).is_err() => {
            return Ok(Existing::Gone);
        }
        // A FIFO would block the read forever, a folder cannot be replaced, a link to nothing
        // cannot be written: none is a lock zhi can judge.
        Err(e @ (ReadError::NotFound | ReadError::Folder | ReadError::NotRegular(_))) => {
            let what = match e {
                ReadError::NotFound => msg!("is a symbolic link to nothing"),
                e => e.to_string(),
            };
            return Err(RunError::LockUnjudgeable {
                path: path.to_path_buf(),
                what,
            });
        }
        // Too large or unreadable: garbled, judged by its age.
        Err(_) => return Ok(Existing::Garbled),
    };
    let holder = serde_json::from_slice(&bytes).ok().or_else(|| {
        // A lock holding just a pid (written by hand or by a script).
        let text = String::from_utf8_lossy(&bytes);
        let pid = text.split_whitespace().next()?.parse().ok()?;
        Some(Holder {
            pid,
            started_at: "unknown".into(),
            run_id: "unknown".into(),
            host: None,
        })
    });
    Ok(holder.map_or(Existing::Garbled, Existing::Holder))
}

/// A live holder (or one on another machine) keeps the lock: exit 75 naming it. A dead one's
/// lock is removed, to be taken on the next try.
fn take_over_or_refuse(
    path: &Path,
    zhi_dir: &Path,
    me: &Holder,
    h: Holder,
) -> Result<(), RunError> {
    if h.host.is_some() && h.host != me.host || alive(h.pid, path) {
        return Err(RunError::InUse {
            folder: zhi_dir.parent().unwrap_or(zhi_dir).to_path_buf(),
            pid: h.pid,
            host: h.host.clone().filter(|_| h.host != me.host),
            started: h.started_at,
            run: h.run_id,
        });
    }
    tracing::warn!(
        "{}",
        msg!(
            "taking over a stale lock of pid {} (run {})",
            h.pid,
            h.run_id
        )
    );
    let _ = std::fs::remove_file(path);
    Ok(())
}

/// A lock being written right now is a few bytes from complete; an empty or garbled one older
/// than a few seconds is stale.
fn wait_or_clear(path: &Path) {
    let age = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .unwrap_or_default();
    let grace = std::time::Duration::from_secs(2);
    if age < grace {
        std::thread::sleep(grace - age);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        held().retain(|p| p != &self.path);
    }
}

fn alive(pid: u32, lock: &Path) -> bool {
    if pid == std::process::id() {
        return held().iter().any(|p| p == lock);
    }
    // SAFETY: kill with signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_naming_our_own_pid_that_we_do_not_hold_is_stale() {
        let dir = tempfile::tempdir().unwrap();
        let layout = OutputLayout::new(dir.path());
        std::fs::create_dir_all(layout.zhi_dir()).unwrap();
        let stale = Holder {
            pid: std::process::id(),
            started_at: "2020-01-01T00:00:00Z".into(),
            run_id: "old".into(),
            host: hostname(),
        };
        std::fs::write(layout.lock(), serde_json::to_vec(&stale).unwrap()).unwrap();
        let lock = RunLock::acquire(&layout, "new").expect("the stale lock is taken over");
        let again = RunLock::acquire(&layout, "other").unwrap_err();
        assert!(matches!(again, RunError::InUse { .. }), "{again}");
        let message = again.to_string();
        assert!(
            message.contains(&format!("pid {}, started", std::process::id())),
            "{message}"
        );
        drop(lock);
        assert!(!layout.lock().exists());
        drop(RunLock::acquire(&layout, "after").unwrap());
    }

    #[test]
    fn a_lock_of_another_machine_is_never_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let layout = OutputLayout::new(dir.path());
        std::fs::create_dir_all(layout.zhi_dir()).unwrap();
        let theirs = Holder {
            pid: 999_999_999,
            started_at: "2020-01-01T00:00:00Z".into(),
            run_id: "theirs".into(),
            host: Some("another-machine.invalid".into()),
        };
        std::fs::write(layout.lock(), serde_json::to_vec(&theirs).unwrap()).unwrap();
        let e = RunLock::acquire(&layout, "mine").unwrap_err();
        assert!(matches!(e, RunError::InUse { .. }), "{e}");
        let message = e.to_string();
        assert!(
            message.contains("(pid 999999999 on another-machine.invalid, started"),
            "{message}"
        );
        assert!(message.contains("never taken over"), "{message}");
        assert!(layout.lock().exists());
    }
}
