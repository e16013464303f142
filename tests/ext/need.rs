//! What a test needs from outside the repository, checked once before any test runs: a test
//! whose needs are all met runs; otherwise it is reported as ignored, with what is missing, or
//! — with `ZHI_TEST_REQUIRE_ALL=1`, as `.ci/run` sets it — fails.
//!
//! A check only looks: it never installs, downloads or starts anything.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Need {
    /// A program on `PATH`.
    Program(&'static str),
    /// A language of tesseract's (`tesseract --list-langs`).
    TesseractLanguage(&'static str),
    /// A font family fontconfig knows (`fc-list`).
    Font(&'static str),
    /// A document the fetch scripts put in the documents folder (`ZHI_TEST_DOCS`, else
    /// `target/test-docs`), by its path there.
    Doc(&'static str),
    /// A file a system package installs: its path and the package.
    SystemFile(&'static str, &'static str),
    /// The local model server named by `ZHI_TEST_LLM_URL`, answering.
    LocalModel,
    /// The local strong model (Qwen2.5-Coder-1.5B) named by `ZHI_TEST_STRONG_URL`, answering.
    StrongModel,
    /// A private mount namespace with a tmpfs in it (`unshare -rm`).
    PrivateMount,
    /// A Slurm cluster that answers (`sinfo`) with a node that can run jobs.
    SlurmCluster,
    /// A python with the Model Context Protocol's Python SDK (`import mcp`), named by
    /// `ZHI_TEST_MCP_PYTHON`.
    McpPython,
}

/// A need this machine does not meet: what it is, why it is missing, and how to meet it.
#[derive(Debug, Clone)]
pub struct Missing {
    pub what: String,
    pub why: String,
    pub how: String,
}

impl Missing {
    /// Why a test cannot run: what it misses, grouped by why (`needs tesseract, pdftoppm (not
    /// on PATH); linn.pdf (not in target/test-docs)`).
    pub fn reason(missing: &[Missing]) -> String {
        let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
        for m in missing {
            match groups.iter_mut().find(|(why, _)| *why == m.why) {
                Some((_, whats)) if !whats.contains(&m.what.as_str()) => whats.push(&m.what),
                Some(_) => {}
                None => groups.push((&m.why, vec![&m.what])),
            }
        }
        let parts: Vec<String> = groups
            .iter()
            .map(|(why, whats)| format!("{} ({why})", whats.join(", ")))
            .collect();
        format!("needs {}", parts.join("; "))
    }
}

/// Checks needs, each once.
#[derive(Default)]
pub struct Checker {
    seen: HashMap<Need, Option<Missing>>,
}

impl Checker {
    /// `None` when the need is met.
    pub fn missing(&mut self, need: Need) -> Option<Missing> {
        self.seen.entry(need).or_insert_with(|| check(need)).clone()
    }
}

fn check(need: Need) -> Option<Missing> {
    match need {
        Need::Program(program) => (!crate::support::reading::on_path(program)).then(|| Missing {
            what: program.to_string(),
            why: "not on PATH".into(),
            how: format!("install {}", package_of(program)),
        }),
        Need::TesseractLanguage(lang) => {
            let package = format!("tesseract-ocr-{}", lang.replace('_', "-"));
            if !crate::support::reading::on_path("tesseract") {
                // The same as a missing program: the test names it once.
                return check(Need::Program("tesseract"));
            }
            let listed = Command::new("tesseract")
                .arg("--list-langs")
                .stdin(Stdio::null())
                .output()
                .map(|o| {
                    format!(
                        "{}{}",
                        String::from_utf8_lossy(&o.stdout),
                        String::from_utf8_lossy(&o.stderr)
                    )
                })
                .unwrap_or_default();
            (!listed.lines().any(|l| l.trim() == lang)).then(|| Missing {
                what: format!("tesseract {lang}"),
                why: "not among tesseract's languages".into(),
                how: format!("install {package}"),
            })
        }
        Need::Font(family) => {
            let listed = Command::new("fc-list")
                .arg(family)
                .stdin(Stdio::null())
                .output()
                .map(|o| !o.stdout.is_empty())
                .unwrap_or(false);
            (!listed).then(|| Missing {
                what: format!("font {family}"),
                why: "fontconfig does not know it".into(),
                how: "install fonts-wqy-microhei".into(),
            })
        }
        Need::Doc(relative) => (!doc(relative).is_file()).then(|| Missing {
            what: relative.to_string(),
            why: format!("not in {}", docs_dir().display()),
            how: format!("run {}", fetch_script(relative)),
        }),
        Need::SystemFile(path, package) => (!Path::new(path).is_file()).then(|| Missing {
            what: path.to_string(),
            why: "not installed".into(),
            how: format!("install {package}"),
        }),
        Need::LocalModel => local_model().err().map(|why| Missing {
            what: "the local model".into(),
            why,
            how: "set ZHI_TEST_LLM_URL to a running server \
                  (examples/local-llm/start.sh prints its URL)"
                .into(),
        }),
        Need::StrongModel => answers("ZHI_TEST_STRONG_URL").err().map(|why| Missing {
            what: "the local strong model".into(),
            why,
            how: "set ZHI_TEST_STRONG_URL to a running server \
                  (examples/local-llm/start.sh --model 1.5b prints its URL)"
                .into(),
        }),
        Need::SlurmCluster => slurm_cluster().err().map(|why| Missing {
            what: "a Slurm cluster".into(),
            why,
            how: "install slurm-wlm and munge, then run scripts/start-slurm.sh as root \
                  (.ci/run does both)"
                .into(),
        }),
        Need::McpPython => mcp_python().err().map(|why| Missing {
            what: "the MCP Python SDK".into(),
            why,
            how: "make a virtual environment with `pip install mcp` and set ZHI_TEST_MCP_PYTHON \
                  to its python (.ci/run does both)"
                .into(),
        }),
        Need::PrivateMount => private_mount().err().map(|why| Missing {
            what: "a private mount namespace".into(),
            why,
            how: "run where `unshare -rm` may mount a tmpfs (not in an unprivileged container)"
                .into(),
        }),
    }
}

/// The Debian package that installs `program`.
fn package_of(program: &str) -> &'static str {
    match program {
        "tesseract" => "tesseract-ocr",
        "pdftotext" | "pdftoppm" | "pdfimages" | "pdfinfo" => "poppler-utils",
        "pango-view" => "pango1.0-tools",
        "qpdf" => "qpdf",
        "unshare" => "util-linux",
        "zcat" => "gzip",
        "tmux" => "tmux",
        "strace" => "strace",
        "chromium" => "chromium",
        "sbatch" | "squeue" | "sinfo" | "scontrol" | "scancel" => "slurm-wlm",
        _ => "it",
    }
}

/// The script that fetches a document.
fn fetch_script(relative: &str) -> &'static str {
    if relative.starts_with("corpus/") {
        "scripts/fetch-pdf-corpus.sh target/test-docs/corpus"
    } else {
        "scripts/fetch-test-docs.sh"
    }
}

/// Where the fetched documents live (`ZHI_TEST_DOCS`, else `target/test-docs`).
pub fn docs_dir() -> PathBuf {
    std::env::var_os("ZHI_TEST_DOCS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-docs"))
}

/// A fetched document, by its path in the documents folder. A test that uses one declares it
/// as a [`Need::Doc`], so it is there when the test runs.
pub fn doc(relative: &str) -> PathBuf {
    docs_dir().join(relative)
}

/// `ZHI_TEST_LLM_URL` is set and a server answers `GET <url>/models` with HTTP 200 (5 s at
/// most).
/// `ZHI_TEST_MCP_PYTHON` names a python that can import the `mcp` package.
fn mcp_python() -> Result<(), String> {
    let python = match std::env::var("ZHI_TEST_MCP_PYTHON") {
        Ok(p) if !p.trim().is_empty() => p,
        _ => return Err("ZHI_TEST_MCP_PYTHON is not set".into()),
    };
    let ok = Command::new(&python)
        .args(["-c", "import mcp.client.stdio"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success());
    match ok {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("{python} cannot import mcp")),
        Err(e) => Err(format!("{python}: {e}")),
    }
}

fn local_model() -> Result<(), String> {
    answers("ZHI_TEST_LLM_URL")
}

/// The variable `var` names a server that answers `GET <url>/models` with HTTP 200.
fn answers(var: &str) -> Result<(), String> {
    let url = match std::env::var(var) {
        Ok(u) if !u.trim().is_empty() => u,
        _ => return Err(format!("{var} is not set")),
    };
    let parsed = reqwest::Url::parse(&url).map_err(|e| format!("{var}={url}: {e}"))?;
    let host = parsed.host_str().unwrap_or("127.0.0.1").to_string();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let timeout = Duration::from_secs(5);
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("{url}: cannot resolve {host}"))?;
    let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("{url} does not answer: {e}"))?;
    stream.set_read_timeout(Some(timeout)).ok();
    stream.set_write_timeout(Some(timeout)).ok();
    let path = format!("{}/models", parsed.path().trim_end_matches('/'));
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("{url}: {e}"))?;
    let mut head = [0u8; 12];
    stream
        .read_exact(&mut head)
        .map_err(|e| format!("{url} does not answer: {e}"))?;
    let status = String::from_utf8_lossy(&head);
    if status.starts_with("HTTP/1.") && status.ends_with("200") {
        Ok(())
    } else {
        Err(format!("{url}{path} answers {status:?}, not 200"))
    }
}

/// `sinfo` answers within 20 s and shows a node that can take a job (idle, mixed or
/// allocated): a cluster whose controller is down, or whose only node is down or drained, is
/// no cluster to submit to.
fn slurm_cluster() -> Result<(), String> {
    if !crate::support::reading::on_path("sinfo") {
        return Err("sinfo is not on PATH".into());
    }
    let mut child = Command::new("sinfo")
        .args(["-h", "-N", "-o", "%N %T"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("sinfo: {e}"))?;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("sinfo does not answer within 20 s".into());
            }
        }
    };
    let mut out = String::new();
    let mut err = String::new();
    child.stdout.take().map(|mut o| o.read_to_string(&mut out));
    child.stderr.take().map(|mut e| e.read_to_string(&mut err));
    if !status.success() {
        return Err(format!(
            "the cluster does not answer: sinfo: {}",
            err.trim()
        ));
    }
    let usable = out.lines().any(|l| {
        l.split_whitespace().nth(1).is_some_and(|state| {
            ["idle", "mixed", "allocated", "completing"]
                .iter()
                // `idle*` does not respond; `idle~` is powered off; `idle-` is planned.
                .any(|s| state.trim_end_matches('-') == *s)
        })
    });
    if usable {
        Ok(())
    } else {
        Err(format!("no node can run a job (sinfo: {})", out.trim()))
    }
}

/// `unshare -rm` can mount a small tmpfs (what the full-disk test does).
fn private_mount() -> Result<(), String> {
    if !crate::support::reading::on_path("unshare") {
        return Err("unshare is not on PATH".into());
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs \"$0\""])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("unshare: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Show [`note!`]s: `--nocapture`, as libtest would show a passing test's output.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// What a test measured (a recall, a model's failure it tolerates), shown with `--nocapture`.
pub fn print_note(args: std::fmt::Arguments) {
    if VERBOSE.load(Ordering::Relaxed) {
        eprintln!("{args}");
    }
}
