//! Runs an agent started: each a child `zhi run` (the same binary), so a run over MCP is a run
//! like any other, with its lock, records, manifest and signals. The server reads what the
//! child leaves in its run folder; it never writes there.

use crate::layout::OutputLayout;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

/// The most of a child's stdout (a manifest) and stderr kept.
const MAX_CHILD_OUTPUT: usize = 256 << 10;
/// The most failures a status lists.
const MAX_FAILURES_SHOWN: usize = 20;

/// How a child `zhi` is started: the binary, its folder, the settings file.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    pub exe: PathBuf,
    pub cwd: PathBuf,
    pub config_file: Option<PathBuf>,
}

/// What a finished child said.
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    /// Its exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Launcher {
    fn command(&self, args: &[String]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(&self.exe);
        c.current_dir(&self.cwd)
            .args(["--json", "--no-progress", "--color", "never"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            // The HTTP transport's token is the server's own: a run has no use for it.
            .env_remove("ZHI_MCP_TOKEN");
        if let Some(f) = &self.config_file {
            c.arg("--config").arg(f);
        }
        c.args(args);
        c
    }

    /// Run `zhi --json ARGS` to its end (skills, plan).
    pub(crate) async fn output(&self, args: &[String]) -> std::io::Result<Finished> {
        let out = self.command(args).output().await?;
        Ok(Finished {
            code: out.status.code(),
            stdout: capped(&out.stdout),
            stderr: capped(&out.stderr),
        })
    }
}

fn capped(bytes: &[u8]) -> String {
    let b = &bytes[..bytes.len().min(MAX_CHILD_OUTPUT)];
    String::from_utf8_lossy(b).into_owned()
}

/// A run in the background.
#[derive(Debug)]
pub(crate) struct Run {
    pub run_id: String,
    pub output_dir: PathBuf,
    /// Jobs its plan had: all, and those that will be sent.
    pub planned: u64,
    pub pid: u32,
    /// When the child was started.
    started: std::time::Instant,
    /// Set once the child has ended.
    ended: watch::Receiver<Option<Finished>>,
}

impl Run {
    /// The child's end, when it has ended.
    pub(crate) fn finished(&self) -> Option<Finished> {
        self.ended.borrow().clone()
    }

    /// Wait up to `limit` for the child to end; whether it has.
    pub(crate) async fn wait(&self, limit: Duration) -> bool {
        let mut rx = self.ended.clone();
        tokio::time::timeout(limit, rx.wait_for(Option::is_some))
            .await
            .is_ok()
    }

    /// Seconds left at the pace so far, once a job has ended (a rough figure: cached jobs end
    /// at once, and the slowest documents may come last).
    pub(crate) fn eta_seconds(&self, done: u64) -> Option<u64> {
        if done == 0 || done >= self.planned {
            return None;
        }
        let per_job = self.started.elapsed().as_secs_f64() / done as f64;
        Some((per_job * (self.planned - done) as f64).ceil() as u64)
    }

    /// Ask the run to stop as SIGTERM does (docs/exit-codes.md#signals): jobs in flight get the
    /// grace period, the rest are recorded `cancelled`.
    pub(crate) fn cancel(&self) {
        if self.finished().is_none()
            && let Ok(pid) = i32::try_from(self.pid)
        {
            // SAFETY: a signal to our own child, which has not been reaped (it has not ended).
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }

    /// The run's records so far: counts by status, tokens, failures.
    pub(crate) fn records(&self) -> Records {
        let path = OutputLayout::new(&self.output_dir)
            .run(&self.run_id)
            .join("results.jsonl");
        Records::read(&path)
    }
}

/// What a run's `results.jsonl` says so far (a torn last line is left out).
#[derive(Debug, Default)]
pub(crate) struct Records {
    pub counts: BTreeMap<String, u64>,
    pub done: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub failures: Vec<Value>,
    pub failed: u64,
}

impl Records {
    fn read(path: &Path) -> Records {
        let mut r = Records::default();
        let Ok(text) = std::fs::read_to_string(path) else {
            return r;
        };
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let status = v["status"].as_str().unwrap_or("unknown").to_string();
            r.done += 1;
            r.prompt_tokens += v["tokens"]["prompt"].as_u64().unwrap_or(0);
            r.completion_tokens += v["tokens"]["completion"].as_u64().unwrap_or(0);
            if status == "failed" {
                r.failed += 1;
                if r.failures.len() < MAX_FAILURES_SHOWN {
                    r.failures.push(json!({
                        "job_id": v["job_id"],
                        "input": v["input"],
                        "kind": v["error"]["kind"],
                        "message": v["error"]["message"],
                    }));
                }
            }
            *r.counts.entry(status).or_default() += 1;
        }
        r
    }
}

/// Why a run did not start.
#[derive(Debug)]
pub(crate) enum StartError {
    /// The child could not be started at all.
    Spawn(std::io::Error),
    /// The child ended before its run began (a usage error, the lock held): its exit code and
    /// what it said.
    Refused(Finished),
}

/// Start `zhi run ARGS` in the background, and wait until it holds its output folder's lock
/// (its run id is then known) or has ended.
pub(crate) async fn start(
    launcher: &Launcher,
    args: &[String],
    output_dir: &Path,
    planned: u64,
) -> Result<Run, StartError> {
    let started = std::time::Instant::now();
    let mut child = launcher.command(args).spawn().map_err(StartError::Spawn)?;
    let pid = child.id().unwrap_or(0);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let (tx, rx) = watch::channel(None);
    let tx = Arc::new(tx);
    let reader = |pipe: Option<_>| {
        tokio::spawn(async move {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = read_capped(&mut p, &mut buf).await;
            }
            buf
        })
    };
    let out_task =
        reader(stdout.map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>));
    let err_task =
        reader(stderr.map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>));
    let waiter = Arc::clone(&tx);
    tokio::spawn(async move {
        let status = child.wait().await;
        let stdout = out_task.await.unwrap_or_default();
        let stderr = err_task.await.unwrap_or_default();
        let _ = waiter.send(Some(Finished {
            code: status.ok().and_then(|s| s.code()),
            stdout: capped(&stdout),
            stderr: capped(&stderr),
        }));
    });
    let layout = OutputLayout::new(output_dir);
    let mut ended = rx.clone();
    let run_id = loop {
        if let Some(id) = lock_run_id(&layout, pid) {
            break id;
        }
        let done = ended.borrow().clone();
        if let Some(f) = done {
            // Ended before we saw its lock: a refusal, or a run quicker than our look (all
            // cached), whose manifest is on stdout.
            match serde_json::from_str::<Value>(&f.stdout)
                .ok()
                .and_then(|m| m["run_id"].as_str().map(str::to_string))
            {
                Some(id) => break id,
                None => return Err(StartError::Refused(f)),
            }
        }
        let _ = tokio::time::timeout(Duration::from_millis(25), ended.changed()).await;
    };
    Ok(Run {
        run_id,
        output_dir: output_dir.to_path_buf(),
        planned,
        pid,
        started,
        ended: rx,
    })
}

async fn read_capped(
    pipe: &mut (dyn tokio::io::AsyncRead + Send + Unpin),
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    let mut chunk = [0u8; 8192];
    loop {
        let n = pipe.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        // Past the cap, read on (the child must never block on a full pipe) and keep nothing.
        let room = MAX_CHILD_OUTPUT.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..n.min(room)]);
    }
}

/// The run id in `<OUT>/.zhi/lock` when process `pid` holds it.
fn lock_run_id(layout: &OutputLayout, pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(layout.lock()).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    (v["pid"].as_u64()? == u64::from(pid))
        .then(|| v["run_id"].as_str().map(str::to_string))
        .flatten()
}

/// Whether another process holds `<OUT>/.zhi/lock`: its pid and run id, as the refusal says.
pub(crate) fn lock_holder(output_dir: &Path) -> Option<(u64, String)> {
    let text = std::fs::read_to_string(OutputLayout::new(output_dir).lock()).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let pid = v["pid"].as_u64()?;
    // A lock whose process is gone is stale; the run takes it over.
    let alive = i32::try_from(pid).is_ok_and(|p| {
        // SAFETY: signal 0 only asks whether the process exists.
        unsafe { libc::kill(p, 0) == 0 }
    });
    alive.then(|| (pid, v["run_id"].as_str().unwrap_or("").to_string()))
}
