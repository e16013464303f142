//! The plan as a run holds it (docs/outputs.md#what-a-run-holds-in-memory): in memory while it
//! is small, and past [`SPILL_AFTER`] jobs in an unlinked temporary file that is read back as
//! the scheduler reaches each job. A plan of a million documents then holds no job in memory
//! but those being decided and run.
//!
//! The file holds what the plan holds (ids, skills' names, the paths and arguments of the
//! documents), never a document's content. It has no name (it is unlinked when made), so it
//! goes with the process, however that ends.

use super::{Job, JobId, Shard};
use crate::error::JobError;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Past this many jobs a plan goes to its file.
pub(crate) const SPILL_AFTER: usize = 4096;

/// Every job of a plan, in plan order.
pub(crate) struct Plan {
    store: Store,
    len: usize,
}

enum Store {
    Memory(Vec<Job>),
    File {
        file: std::fs::File,
        /// Each job's skill is written as its position here (one name, shared, per skill).
        skills: Vec<Arc<str>>,
    },
}

/// A plan being built.
pub(crate) struct PlanWriter {
    jobs: Vec<Job>,
    spill: Option<Spill>,
    spill_after: usize,
    len: usize,
}

struct Spill {
    out: BufWriter<std::fs::File>,
    skills: Vec<Arc<str>>,
    buf: Vec<u8>,
}

impl PlanWriter {
    pub(crate) fn new() -> PlanWriter {
        PlanWriter::spilling_after(SPILL_AFTER)
    }

    pub(crate) fn spilling_after(spill_after: usize) -> PlanWriter {
        PlanWriter {
            jobs: Vec::new(),
            spill: None,
            spill_after,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn push(&mut self, job: Job) -> io::Result<()> {
        self.len += 1;
        if self.spill.is_none() {
            if self.jobs.len() < self.spill_after {
                self.jobs.push(job);
                return Ok(());
            }
            let file = match tempfile::tempfile() {
                Ok(file) => file,
                // No temp folder to write to (a read-only container, a full disk): the plan is
                // held in memory, as a smaller one is.
                Err(e) => {
                    tracing::warn!(
                        "{}",
                        msg!(
                            "cannot keep the plan in a temporary file (TMPDIR): {e}; it is held in memory"
                        )
                    );
                    self.spill_after = usize::MAX;
                    self.jobs.push(job);
                    return Ok(());
                }
            };
            let mut spill = Spill {
                out: BufWriter::with_capacity(1 << 16, file),
                skills: Vec::new(),
                buf: Vec::new(),
            };
            for held in std::mem::take(&mut self.jobs) {
                spill.write(&held)?;
            }
            self.spill = Some(spill);
        }
        match &mut self.spill {
            Some(spill) => spill.write(&job),
            None => Ok(()),
        }
    }

    /// The job at `position` (of those pushed): read back from the file when spilled.
    pub(crate) fn get(&mut self, position: usize) -> io::Result<Job> {
        match &mut self.spill {
            None => self
                .jobs
                .get(position)
                .cloned()
                .ok_or_else(|| io::Error::other("no such job")),
            Some(spill) => {
                spill.out.flush()?;
                let skills = spill.skills.clone();
                let mut it = Jobs::from_file(spill.out.get_ref(), skills, self.len);
                it.nth(position)
                    .unwrap_or_else(|| Err(io::Error::other("no such job")))
            }
        }
    }

    pub(crate) fn finish(self) -> io::Result<Plan> {
        let store = match self.spill {
            None => {
                let mut jobs = self.jobs;
                // Held for the whole run: not with up to twice the room it needs.
                jobs.shrink_to_fit();
                Store::Memory(jobs)
            }
            Some(spill) => {
                let file = spill.out.into_inner().map_err(|e| e.into_error())?;
                Store::File {
                    file,
                    skills: spill.skills,
                }
            }
        };
        Ok(Plan {
            store,
            len: self.len,
        })
    }
}

impl Plan {
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Every job, in plan order. Each call reads the plan anew; a read of the file that fails
    /// is the item's error, and the end.
    pub(crate) fn jobs(&self) -> Jobs<'_> {
        match &self.store {
            Store::Memory(jobs) => Jobs::Memory(jobs.iter()),
            Store::File { file, skills } => Jobs::from_file(file, skills.clone(), self.len),
        }
    }

    /// The jobs `shard` owns, the first `limit` of them: those a run does.
    pub(crate) fn select(
        &self,
        shard: Option<Shard>,
        limit: Option<usize>,
    ) -> impl Iterator<Item = io::Result<Job>> + Send + '_ {
        let len = self.len;
        self.jobs()
            .enumerate()
            .filter(move |(i, j)| match (shard, j) {
                (Some(s), Ok(j)) => s.owns(j.id.as_str(), *i, len),
                _ => true,
            })
            .map(|(_, j)| j)
            .take(limit.unwrap_or(usize::MAX))
    }
}

/// The jobs a run does (its shard's, the first `--limit` of them), and what it needs to know
/// of them as a whole, found in one reading of the plan.
pub(crate) struct Selection {
    /// Every job of the plan, all shards (shared with the manifest, which names them all).
    pub plan: Arc<Plan>,
    pub shard: Option<Shard>,
    pub limit: Option<usize>,
    pub outline: Outline,
}

/// The selected jobs as a whole.
#[derive(Default)]
pub(crate) struct Outline {
    /// How many there are.
    pub len: usize,
    /// How many have no problem known while planning: those that may run.
    pub may_run: usize,
    /// One job of each kind ([`kind`]), in plan order: what the settings, the server's
    /// questions, the schemas and the tables are decided from. As many as the plan's skills,
    /// not as its documents (unless a schema or a direct answer's file is named per document).
    pub samples: Vec<Job>,
}

/// What the run decides of a job before running any: its skill, the file its direct answer
/// goes to (whether it is one request, and what a table reads), and the schema its arguments
/// name.
fn kind(job: &Job, skills: &crate::skills::SkillSet) -> JobId {
    let mut parts = std::collections::BTreeMap::new();
    if let Some(skill) = skills.get(&job.skill) {
        if let Some(file) = skill.direct_output(&job.args) {
            parts.insert("direct".to_string(), file);
        }
        if let Some(crate::skills::SchemaSpec::Arg(name)) = skill.schema()
            && let Some(value) = job.args.get(name)
        {
            parts.insert("schema".to_string(), value.clone());
        }
    }
    JobId::new(&job.skill, "", &parts)
}

impl Selection {
    pub(crate) fn new(
        plan: Plan,
        shard: Option<Shard>,
        limit: Option<usize>,
        skills: &crate::skills::SkillSet,
    ) -> Result<Selection, super::PlanError> {
        let mut outline = Outline::default();
        let mut kinds = std::collections::HashSet::new();
        for job in plan.select(shard, limit) {
            let job = job.map_err(|e| super::PlanError::Spill(e.to_string()))?;
            outline.len += 1;
            outline.may_run += usize::from(job.problem.is_none());
            if kinds.insert(kind(&job, skills)) {
                outline.samples.push(job);
            }
        }
        Ok(Selection {
            plan: Arc::new(plan),
            shard,
            limit,
            outline,
        })
    }

    /// The selected jobs, in plan order.
    pub(crate) fn jobs(&self) -> impl Iterator<Item = io::Result<Job>> + Send + '_ {
        self.plan.select(self.shard, self.limit)
    }

    pub(crate) fn len(&self) -> usize {
        self.outline.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.outline.len == 0
    }
}

impl crate::manifest::IdSource for Plan {
    fn each_id(&self, f: &mut dyn FnMut(&str)) -> io::Result<()> {
        for job in self.jobs() {
            f(job?.id.as_str());
        }
        Ok(())
    }
}

/// The jobs of a plan, read in order.
pub(crate) enum Jobs<'a> {
    Memory(std::slice::Iter<'a, Job>),
    File {
        from: BufReader<At<'a>>,
        skills: Vec<Arc<str>>,
        /// How many jobs the file still holds: a file that ends before them is cut short.
        left: usize,
        failed: bool,
    },
}

impl<'a> Jobs<'a> {
    fn from_file(file: &'a std::fs::File, skills: Vec<Arc<str>>, len: usize) -> Jobs<'a> {
        Jobs::File {
            from: BufReader::with_capacity(1 << 16, At { file, offset: 0 }),
            skills,
            left: len,
            failed: false,
        }
    }
}

impl Iterator for Jobs<'_> {
    type Item = io::Result<Job>;

    fn next(&mut self) -> Option<io::Result<Job>> {
        match self {
            Jobs::Memory(it) => it.next().cloned().map(Ok),
            Jobs::File {
                from,
                skills,
                left,
                failed,
            } => {
                if *failed || *left == 0 {
                    return None;
                }
                let read = match read_job(from, skills) {
                    Ok(Some(job)) => Ok(job),
                    Ok(None) => Err(bad(&format!("jobs missing from its end: {left}"))),
                    Err(e) => Err(e),
                };
                *left -= 1;
                *failed = read.is_err();
                Some(read)
            }
        }
    }
}

/// A file read from its own offset (`pread`): several readers of one plan never disturb each
/// other.
pub(crate) struct At<'a> {
    file: &'a std::fs::File,
    offset: u64,
}

impl<'a> At<'a> {
    pub(crate) fn new(file: &'a std::fs::File, offset: u64) -> At<'a> {
        At { file, offset }
    }
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}

impl Spill {
    fn write(&mut self, job: &Job) -> io::Result<()> {
        // A plan has a few skills: found by a look along them.
        let skill = match self.skills.iter().position(|s| *s == job.skill) {
            Some(i) => i,
            None => {
                self.skills.push(job.skill.clone());
                self.skills.len() - 1
            }
        };
        let b = &mut self.buf;
        b.clear();
        b.extend_from_slice(&job.id.0);
        put_len(b, skill);
        b.push(u8::from(job.is_dir));
        put(b, job.input.as_bytes());
        put(b, job.path.as_os_str().as_bytes());
        put(b, job.output_rel.as_os_str().as_bytes());
        put_len(b, job.args.len());
        for (k, v) in &job.args {
            put(b, k.as_bytes());
            put(b, v.as_bytes());
        }
        put_len(b, job.extra_inputs.len());
        for (name, shown, path) in &job.extra_inputs {
            put(b, name.as_bytes());
            put(b, shown.as_bytes());
            put(b, path.as_os_str().as_bytes());
        }
        match &job.problem {
            None => b.push(0),
            Some(p) => {
                b.push(1);
                put(b, &serde_json::to_vec(p).map_err(io::Error::other)?);
            }
        }
        self.out.write_all(b)
    }
}

fn put_len(b: &mut Vec<u8>, n: usize) {
    b.extend_from_slice(&(n as u64).to_le_bytes());
}

fn put(b: &mut Vec<u8>, bytes: &[u8]) {
    put_len(b, bytes.len());
    b.extend_from_slice(bytes);
}

/// The next job, or `None` at the end of the file.
fn read_job(r: &mut impl Read, skills: &[Arc<str>]) -> io::Result<Option<Job>> {
    let mut id = [0u8; 16];
    match r.read_exact(&mut id) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let skill = skills
        .get(get_len(r)?)
        .cloned()
        .ok_or_else(|| bad("a skill the plan does not name"))?;
    let is_dir = get_byte(r)? == 1;
    let input = get_string(r)?;
    let path = get_path(r)?;
    let output_rel = get_path(r)?;
    let mut args = std::collections::BTreeMap::new();
    for _ in 0..get_len(r)? {
        let k = get_string(r)?;
        args.insert(k, get_string(r)?);
    }
    let n = get_len(r)?;
    let mut extra_inputs = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        extra_inputs.push((get_string(r)?, get_string(r)?, get_path(r)?));
    }
    let problem = match get_byte(r)? {
        0 => None,
        _ => Some(Box::new(
            serde_json::from_slice::<JobError>(&get(r)?).map_err(io::Error::other)?,
        )),
    };
    Ok(Some(Job {
        id: JobId(id),
        skill,
        input,
        path,
        is_dir,
        args,
        extra_inputs,
        output_rel,
        problem,
    }))
}

fn bad(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the plan's file: {what}"),
    )
}

fn get_byte(r: &mut impl Read) -> io::Result<u8> {
    let mut b = [0u8; 1];
    r.read_exact(&mut b)?;
    Ok(b[0])
}

fn get_len(r: &mut impl Read) -> io::Result<usize> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    usize::try_from(u64::from_le_bytes(b)).map_err(|_| bad("a length too large"))
}

fn get(r: &mut impl Read) -> io::Result<Vec<u8>> {
    let n = get_len(r)?;
    // A length from a file gone bad is not trusted with memory before its bytes are read.
    let mut v = Vec::with_capacity(n.min(1 << 16));
    r.take(n as u64).read_to_end(&mut v)?;
    if v.len() != n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(v)
}

fn get_string(r: &mut impl Read) -> io::Result<String> {
    String::from_utf8(get(r)?).map_err(|_| bad("text that is not UTF-8"))
}

fn get_path(r: &mut impl Read) -> io::Result<PathBuf> {
    Ok(PathBuf::from(std::ffi::OsString::from_vec(get(r)?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::collections::BTreeMap;
    use std::ffi::OsStr;

    fn job(i: usize, skill: &Arc<str>) -> Job {
        let input = format!("docs/{i:05}.txt");
        let args = BTreeMap::from([("to".to_string(), format!("lang {i}"))]);
        Job {
            id: JobId::new(skill, &input, &args),
            skill: skill.clone(),
            // A name that is not UTF-8 is a path like any other.
            path: PathBuf::from(OsStr::from_bytes(&[
                b'/',
                b'd',
                0xff,
                b'0' + (i % 10) as u8,
            ])),
            output_rel: super::super::output_rel(skill, &input),
            input,
            is_dir: i.is_multiple_of(7),
            args,
            extra_inputs: if i.is_multiple_of(3) {
                vec![(
                    "ref".to_string(),
                    format!("ref/{i}.md"),
                    PathBuf::from(format!("/r/{i}.md")),
                )]
            } else {
                Vec::new()
            },
            problem: i
                .is_multiple_of(5)
                .then(|| Box::new(JobError::new(ErrorKind::InputError, format!("broken {i}")))),
        }
    }

    #[test]
    fn a_plan_past_its_limit_reads_back_every_job_as_it_was_in_order() {
        let (a, b): (Arc<str>, Arc<str>) = ("summarize".into(), "translate".into());
        let made: Vec<Job> = (0..50)
            .map(|i| job(i, if i % 2 == 0 { &a } else { &b }))
            .collect();
        for spill_after in [100, 10, 0] {
            let mut w = PlanWriter::spilling_after(spill_after);
            for j in &made {
                w.push(j.clone()).unwrap();
            }
            assert_eq!(w.get(37).unwrap().input, made[37].input);
            let plan = w.finish().unwrap();
            assert_eq!(plan.len(), 50);
            assert_eq!(matches!(plan.store, Store::File { .. }), spill_after < 50);
            // Read twice, side by side: each reader keeps its own place.
            let (mut one, mut two) = (plan.jobs(), plan.jobs());
            for want in &made {
                assert_eq!(&one.next().unwrap().unwrap(), want);
                assert_eq!(&two.next().unwrap().unwrap(), want);
            }
            assert!(one.next().is_none());
            // The skill's name is shared again when read back.
            let read: Vec<Job> = plan.jobs().map(Result::unwrap).collect();
            assert!(Arc::ptr_eq(&read[0].skill, &read[2].skill));
        }
    }

    #[test]
    fn a_shard_and_a_limit_select_from_the_plan_in_order() {
        let a: Arc<str> = "summarize".into();
        let mut w = PlanWriter::spilling_after(5);
        for i in 0..30 {
            w.push(job(i, &a)).unwrap();
        }
        let plan = w.finish().unwrap();
        let slice = Shard::parse("slice:2/3").unwrap();
        let got: Vec<String> = plan
            .select(Some(slice), Some(4))
            .map(|j| j.unwrap().input)
            .collect();
        assert_eq!(
            got,
            [
                "docs/00010.txt",
                "docs/00011.txt",
                "docs/00012.txt",
                "docs/00013.txt"
            ]
        );
        let hash = Shard::parse("1/2").unwrap();
        let other = Shard::parse("2/2").unwrap();
        let n = plan.select(Some(hash), None).count() + plan.select(Some(other), None).count();
        assert_eq!(n, 30);
    }

    #[test]
    fn a_torn_plan_file_is_an_error_not_fewer_jobs() {
        let a: Arc<str> = "summarize".into();
        let mut w = PlanWriter::spilling_after(0);
        for i in 0..3 {
            w.push(job(i, &a)).unwrap();
        }
        let plan = w.finish().unwrap();
        let Store::File { file, .. } = &plan.store else {
            panic!("not spilled")
        };
        let len = file.metadata().unwrap().len();
        file.set_len(len - 3).unwrap();
        let read: Vec<io::Result<Job>> = plan.jobs().collect();
        assert_eq!(read.len(), 3);
        assert!(read[2].is_err());
    }

    #[test]
    fn a_plan_file_cut_between_two_jobs_is_an_error_not_fewer_jobs() {
        let a: Arc<str> = "summarize".into();
        let mut w = PlanWriter::spilling_after(0);
        for i in 0..2 {
            w.push(job(i, &a)).unwrap();
        }
        w.get(0).unwrap();
        let two = w
            .spill
            .as_ref()
            .unwrap()
            .out
            .get_ref()
            .metadata()
            .unwrap()
            .len();
        w.push(job(2, &a)).unwrap();
        let plan = w.finish().unwrap();
        let Store::File { file, .. } = &plan.store else {
            panic!("not spilled")
        };
        file.set_len(two).unwrap();
        let read: Vec<io::Result<Job>> = plan.jobs().collect();
        assert_eq!(read.len(), 3);
        assert!(read[..2].iter().all(Result::is_ok));
        let err = read[2].as_ref().unwrap_err().to_string();
        assert!(err.contains("jobs missing from its end: 1"), "{err}");
    }
}
