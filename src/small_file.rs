//! The small YAML files a person hands zhi — skills, settings, jobs files — and the run lock,
//! read without trusting what the path turns out to be.
//!
//! A path that should name a few kilobytes of YAML can name anything: a symbolic link to
//! `/dev/zero` (an endless read that grows until the process is killed), a FIFO (an `open` or a
//! `read` that blocks until some writer appears, which is never), a folder, or a file grown to
//! gigabytes. And a parser handed hostile text can spend minutes on it: 100,000 nested `[` cost
//! the YAML parser time quadratic in the depth. Every such file goes through [`read`], which
//! takes regular files only and at most a cap of bytes, and YAML text through
//! [`check_yaml_nesting`] before it reaches the parser. Either fails with a reason a person can
//! act on; neither can block or grow without bound.

use std::io::Read;
use std::path::Path;

/// The deepest YAML nesting (block indentation levels, sequence dashes and flow brackets
/// together) accepted in a file a person wrote. Real skill, settings and jobs files stay below
/// ten; the parser's cost grows with the square of the depth, so the limit is what keeps a
/// malformed or hostile file cheap to refuse.
pub(crate) const MAX_YAML_DEPTH: usize = 64;

/// Why a small file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    /// Nothing at the path (a dangling symbolic link included).
    #[error("does not exist")]
    NotFound,
    /// A folder where a file was expected.
    #[error("is a folder, not a file")]
    Folder,
    /// A FIFO, socket or device: reading it could block forever or never end.
    #[error("is {0}, not a regular file")]
    NotRegular(String),
    /// Larger than the cap for its kind of file.
    #[error("is larger than {}, the limit for this kind of file", human_bytes(*.0))]
    TooLarge(u64),
    /// Any other failure of the file system.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
}

/// Which regular file a path names itself (a link is never followed), and its state: two
/// equal stamps are the same file, unchanged. A skill's references are pinned by it when the
/// skill is loaded, and a job reads one only while the path still names that very file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

impl Stamp {
    /// The stamp of the regular file at `path` itself; `None` for a link, a folder, anything
    /// else, or nothing.
    pub(crate) fn of_file(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        Stamp::of_meta(&meta)
    }

    /// From metadata read without following links (`symlink_metadata`, a walk's entry).
    pub(crate) fn of_meta(meta: &std::fs::Metadata) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        meta.file_type().is_file().then(|| Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        })
    }
}

/// [`read`] as an `io::Result`: a missing file is `ErrorKind::NotFound`, every other refusal
/// an error that says why. For zhi's own files in the output folder (records, manifests,
/// journals, checkpoints), where a FIFO or a device planted in their place must not hang a run.
pub(crate) fn read_io(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    read(path, cap).map_err(|e| match e {
        ReadError::NotFound => std::io::Error::from(std::io::ErrorKind::NotFound),
        ReadError::Io(e) => e,
        other => std::io::Error::other(format!("{} {other}", path.display())),
    })
}

/// Read a regular file of at most `cap` bytes.
///
/// The type is checked on what the path resolves to before opening (a symbolic link to a
/// device is refused unopened), the file is opened non-blocking (so a FIFO swapped in after
/// the check cannot block the `open`) and checked again through the open handle, and the read
/// stops at `cap + 1` bytes (so a file growing while it is read cannot exceed the cap).
pub(crate) fn read(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    let meta = std::fs::metadata(path).map_err(not_found)?;
    check_type(&meta)?;
    if meta.len() > cap {
        return Err(ReadError::TooLarge(cap));
    }
    let file = open_nonblocking(path).map_err(not_found)?;
    check_type(&file.metadata()?)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(ReadError::TooLarge(cap));
    }
    Ok(bytes)
}

/// Open a regular file for reading, of any size (zhi's own large files, read in a stream):
/// the same checks as [`read`], without the cap.
pub(crate) fn open_regular(path: &Path) -> Result<std::fs::File, ReadError> {
    check_type(&std::fs::metadata(path).map_err(not_found)?)?;
    let file = open_nonblocking(path).map_err(not_found)?;
    check_type(&file.metadata()?)?;
    Ok(file)
}

fn not_found(e: std::io::Error) -> ReadError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ReadError::NotFound
    } else {
        ReadError::Io(e)
    }
}

fn check_type(meta: &std::fs::Metadata) -> Result<(), ReadError> {
    let t = meta.file_type();
    if t.is_file() {
        return Ok(());
    }
    if t.is_dir() {
        return Err(ReadError::Folder);
    }
    Err(ReadError::NotRegular(kind_of(&t)))
}

#[cfg(unix)]
fn kind_of(t: &std::fs::FileType) -> String {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        msg!("a FIFO (named pipe)")
    } else if t.is_char_device() {
        msg!("a character device")
    } else if t.is_block_device() {
        msg!("a block device")
    } else if t.is_socket() {
        msg!("a socket")
    } else {
        msg!("not a regular file")
    }
}

#[cfg(not(unix))]
fn kind_of(_: &std::fs::FileType) -> String {
    "a special file".to_string()
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// `1 MiB`, `64 KiB`, `300 bytes`.
pub(crate) fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// For a serde field of type `Option<serde_norway::Value>` (with `#[serde(default)]`): keeps a
/// field that is present but empty (`rpm:`) apart from one that is left out. The first is a
/// value to check (and usually refuse), the second no value at all.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_norway::Value>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

/// A YAML mapping's fields as `T` — a struct of [`present`] fields with the other keys
/// flattened into a `Mapping` — and the keys that are not strings, which no field can take
/// (and which serde would refuse as field names): each is for a warning, never a failure.
pub(crate) fn fields<T: serde::de::DeserializeOwned>(
    mut map: serde_norway::Mapping,
) -> Result<(T, Vec<serde_norway::Value>), serde_norway::Error> {
    let mut odd = Vec::new();
    map.retain(|k, _| {
        let keep = k.is_string();
        if !keep {
            odd.push(k.clone());
        }
        keep
    });
    T::deserialize(serde_norway::Value::Mapping(map)).map(|t| (t, odd))
}

/// YAML nested deeper than [`MAX_YAML_DEPTH`], found on `line` (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("YAML nested deeper than {MAX_YAML_DEPTH} levels at line {line}; refused before parsing")]
pub(crate) struct TooDeep {
    pub line: usize,
}

/// Refuse YAML text nested deeper than [`MAX_YAML_DEPTH`], in time linear in its length.
///
/// Not a parser: a scan that counts the levels a parser would open — one per deeper
/// indentation, one per sequence dash that starts a line's content (`- - - x` is three), one
/// per `[`/`{` of a flow collection — and skips what cannot nest: quoted strings, comments, and
/// the text of block scalars (`|`, `>`), where a system prompt may hold any brackets it likes.
/// It may count a level the parser would not (never fewer on the inputs that matter: runs of
/// brackets and dashes), which at a limit of 64 refuses no real file.
pub(crate) fn check_yaml_nesting(text: &str) -> Result<(), TooDeep> {
    let mut scan = Scan::default();
    for (i, line) in text.lines().enumerate() {
        scan.line(line).map_err(|()| TooDeep { line: i + 1 })?;
    }
    Ok(())
}

#[derive(Default)]
struct Scan {
    /// Indentation of the open block levels, innermost last.
    indents: Vec<usize>,
    /// Open `[`/`{` of the current flow collection.
    flow: usize,
    /// Block levels open when the current flow collection began.
    flow_base: usize,
    /// Inside a quoted scalar that continues on the next line: its quote character.
    quote: Option<u8>,
    /// Inside a block scalar whose parent node sits at this column.
    block_scalar: Option<usize>,
    /// In flow text, whether a node may start here (a quote then opens a quoted scalar; in
    /// the middle of a plain scalar, `don't`, it is just a character).
    node_start: bool,
}

impl Scan {
    fn line(&mut self, line: &str) -> Result<(), ()> {
        let b = line.as_bytes();
        let indent = b.iter().take_while(|c| **c == b' ').count();
        if let Some(parent) = self.block_scalar {
            if b[indent..].iter().all(u8::is_ascii_whitespace) || indent > parent {
                return Ok(());
            }
            self.block_scalar = None;
        }
        if self.quote.is_some() || self.flow > 0 {
            return self.flow_text(b, 0);
        }
        let rest = &b[indent..];
        if rest.is_empty() || rest[0] == b'#' || rest.starts_with(b"---") || rest[0] == b'%' {
            return Ok(());
        }
        while self.indents.last().is_some_and(|top| *top >= indent) {
            self.indents.pop();
        }
        self.indents.push(indent);
        // Compact nested sequences: every `- ` (or `? `) opens one more level.
        let mut pos = indent;
        let mut parent = indent;
        self.deep(0)?;
        while pos < b.len()
            && matches!(b[pos], b'-' | b'?')
            && b.get(pos + 1).is_none_or(|c| *c == b' ' || *c == b'\t')
        {
            self.indents.push(pos + 1);
            self.deep(0)?;
            parent = pos;
            pos += 1;
            while pos < b.len() && (b[pos] == b' ' || b[pos] == b'\t') {
                pos += 1;
            }
        }
        let key_col = pos;
        self.node(b, pos, parent, key_col)
    }

    /// The node starting at `pos` in block context: a flow collection, a quoted scalar, a
    /// block scalar, or a plain scalar that may be a key (`key: value`).
    fn node(&mut self, b: &[u8], mut pos: usize, parent: usize, key_col: usize) -> Result<(), ()> {
        // Anchors and tags before a node do not nest.
        while pos < b.len() && matches!(b[pos], b'&' | b'!') {
            while pos < b.len() && b[pos] != b' ' {
                pos += 1;
            }
            while pos < b.len() && b[pos] == b' ' {
                pos += 1;
            }
        }
        match b.get(pos) {
            None | Some(b'#') => Ok(()),
            Some(b'[' | b'{') => {
                self.flow_base = self.indents.len();
                self.flow_text(b, pos)
            }
            Some(b'"' | b'\'') => {
                let q = b[pos];
                match closing_quote(b, pos + 1, q) {
                    Some(end) => self.after_scalar(b, end + 1, key_col),
                    None => {
                        self.quote = Some(q);
                        self.flow_base = self.indents.len();
                        Ok(())
                    }
                }
            }
            Some(b'|' | b'>') => {
                self.block_scalar = Some(parent);
                Ok(())
            }
            Some(_) => {
                // A plain scalar: nothing nests inside it; a `: ` makes it a key.
                match find_value_indicator(b, pos) {
                    Some(v) => self.value(b, v, key_col),
                    None => Ok(()),
                }
            }
        }
    }

    /// After a quoted or flow key: `: value` may follow.
    fn after_scalar(&mut self, b: &[u8], pos: usize, key_col: usize) -> Result<(), ()> {
        let mut p = pos;
        while p < b.len() && b[p] == b' ' {
            p += 1;
        }
        if b.get(p) == Some(&b':') {
            return self.value(b, p + 1, key_col);
        }
        Ok(())
    }

    /// The value after a key's `:` at `pos`.
    fn value(&mut self, b: &[u8], pos: usize, key_col: usize) -> Result<(), ()> {
        let mut p = pos;
        while p < b.len() && (b[p] == b' ' || b[p] == b'\t') {
            p += 1;
        }
        if p >= b.len() {
            return Ok(());
        }
        // The value is one level below its key.
        self.indents.push(key_col + 1);
        self.deep(0)?;
        self.node(b, p, key_col, key_col)
    }

    /// Scan flow text (or a quoted scalar continued) from `pos` to the end of the line.
    fn flow_text(&mut self, b: &[u8], mut pos: usize) -> Result<(), ()> {
        while pos < b.len() {
            if let Some(q) = self.quote {
                let Some(end) = closing_quote(b, pos, q) else {
                    return Ok(());
                };
                self.quote = None;
                self.node_start = false;
                if self.flow == 0 {
                    return Ok(());
                }
                pos = end + 1;
                continue;
            }
            let c = b[pos];
            match c {
                b'[' | b'{' => {
                    self.flow += 1;
                    self.deep(self.flow)?;
                    self.node_start = true;
                }
                b']' | b'}' => {
                    self.flow = self.flow.saturating_sub(1);
                    self.node_start = false;
                    if self.flow == 0 {
                        // Back in block context; what follows on the line (the value of a
                        // flow key) is not counted.
                        self.indents.truncate(self.flow_base);
                        return Ok(());
                    }
                }
                b',' | b'?' => self.node_start = true,
                b':' if b.get(pos + 1).is_none_or(|n| {
                    matches!(n, b' ' | b'\t' | b',' | b'[' | b']' | b'{' | b'}')
                }) =>
                {
                    self.node_start = true;
                }
                b' ' | b'\t' => {}
                b'"' | b'\'' if self.node_start => self.quote = Some(c),
                b'#' if pos == 0 || matches!(b[pos - 1], b' ' | b'\t') => return Ok(()),
                _ => self.node_start = false,
            }
            pos += 1;
        }
        Ok(())
    }

    fn deep(&self, flow: usize) -> Result<(), ()> {
        if self.indents.len() + flow > MAX_YAML_DEPTH {
            Err(())
        } else {
            Ok(())
        }
    }
}

/// The index of the quote closing a scalar opened by `q`, searching from `from`.
fn closing_quote(b: &[u8], from: usize, q: u8) -> Option<usize> {
    let mut i = from;
    while i < b.len() {
        if q == b'"' && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == q {
            if q == b'\'' && b.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Where the value of a `key: value` plain scalar starts (just after the `:`), if it is one.
fn find_value_indicator(b: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'#' if i > from && (b[i - 1] == b' ' || b[i - 1] == b'\t') => return None,
            b':' if b.get(i + 1).is_none_or(|c| *c == b' ' || *c == b'\t') => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(text: &str) -> bool {
        check_yaml_nesting(text).is_ok()
    }

    #[test]
    fn builtin_skills_and_ordinary_yaml_pass() {
        for (file, yaml) in crate::skills::builtin_sources() {
            assert_eq!(check_yaml_nesting(yaml), Ok(()), "{file}");
        }
        for yaml in [
            include_str!("../examples/ci/github-actions.yml"),
            include_str!("../examples/k8s/indexed-job.yaml"),
            include_str!("../examples/k8s/merge-job.yaml"),
        ] {
            assert_eq!(check_yaml_nesting(yaml), Ok(()));
        }
        assert!(depth_ok(
            "jobs:\n  - skill: summarize\n    inputs: [reports/, 'a[1].txt']\n    args: {to: english}\n"
        ));
        assert!(depth_ok("a: {b: [c, {d: [e]}]}\n"));
    }

    #[test]
    fn brackets_in_prompts_strings_and_comments_do_not_count() {
        let many = "[".repeat(200);
        assert!(depth_ok(&format!(
            "name: a\nsystem_prompt: |\n  Use {many} freely.\n\n  Still {many} the prompt.\ntools: [x]\n"
        )));
        assert!(depth_ok(&format!("a: \"{many}\"\nb: '{many}'\n# {many}\n")));
        assert!(depth_ok(&format!("a: text with {many} inside\n")));
        assert!(depth_ok(&format!(
            "- |\n  {many}\n- key: >-\n    {many}\n  other: 1\n"
        )));
        assert!(depth_ok(&format!(
            "a: \"multi\n  line {many}\n  end\"\nb: 1\n"
        )));
    }

    #[test]
    fn deep_flow_nesting_is_refused_before_parsing() {
        let deep = format!("name: x\ndescription: {}\n", "[".repeat(100_000));
        let start = std::time::Instant::now();
        assert_eq!(check_yaml_nesting(&deep), Err(TooDeep { line: 2 }));
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        assert!(!depth_ok(&"[".repeat(65)));
        assert!(depth_ok(&format!("{}{}", "[".repeat(60), "]".repeat(60))));
        // Depth is what counts, not how many brackets a file holds.
        assert!(depth_ok(&"[[1], [2]]\n".repeat(1000)));
        assert!(!depth_ok(&format!("a:\n  b: {}", "{x: ".repeat(70))));
        // A quote inside a plain scalar opens nothing, so it cannot hide what follows.
        assert!(!depth_ok(&format!("a: [don't, {}", "[".repeat(100))));
        assert!(depth_ok("a: [don't, 'it''s', \"q\\\"[\"]\n"));
    }

    #[test]
    fn deep_block_nesting_is_refused() {
        assert!(!depth_ok(&format!("{}x\n", "- ".repeat(100))));
        let mut indented = String::new();
        for i in 0..80 {
            indented.push_str(&format!("{}k{i}:\n", " ".repeat(i)));
        }
        assert!(!depth_ok(&indented));
        let mut shallow = String::new();
        for i in 0..80 {
            shallow.push_str(&format!("k{i}:\n  v: 1\n"));
        }
        assert!(depth_ok(&shallow));
    }

    #[test]
    fn special_files_are_refused_unopened() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(read(dir.path(), 10), Err(ReadError::Folder)));
        assert!(matches!(
            read(&dir.path().join("nope"), 10),
            Err(ReadError::NotFound)
        ));
        let f = dir.path().join("f.yaml");
        std::fs::write(&f, "abc").unwrap();
        assert_eq!(read(&f, 3).unwrap(), b"abc");
        assert!(matches!(read(&f, 2), Err(ReadError::TooLarge(2))));
        #[cfg(unix)]
        {
            let zero = dir.path().join("zero.yaml");
            std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
            let e = read(&zero, 1 << 20).unwrap_err();
            assert!(e.to_string().contains("character device"), "{e}");
            let fifo = dir.path().join("fifo.yaml");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.is_ok_and(|s| s.success()) {
                let e = read(&fifo, 1 << 20).unwrap_err();
                assert!(e.to_string().contains("FIFO"), "{e}");
            }
        }
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_bytes(1 << 20), "1 MiB");
        assert_eq!(human_bytes(64 << 10), "64 KiB");
        assert_eq!(human_bytes(300), "300 bytes");
    }
}
