//! `zhi run` and `zhi plan`: resolve settings, plan, then (for run) execute and report.

use super::{Ctx, print_json};
use crate::cli::{AgentJobs, RunArgs, SubmitWhen};
use crate::config::{Config, Overrides};
use crate::exit::{Exit, ExitError};
use crate::flags::{BatchOptions, RunFlags};
use crate::i18n::{Lang, notice};
use crate::plan::{self, ExpandOptions, Job, PlanRequest, PlanStatus, Selection};
use crate::sanitize::one_line;
use crate::skills::{self, SkillSet};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Settings, skills and jobs of a `run` or `plan`.
pub(super) struct Prepared {
    pub config: Config,
    pub skills: Arc<SkillSet>,
    /// The plan (all shards), and the jobs of it this process does.
    pub selection: Selection,
    pub output_dir: PathBuf,
}

fn overrides(a: &RunArgs) -> Overrides {
    // Values were checked by the argument parser (`config::flag`, `flags`).
    Overrides {
        config_file: None,
        output_dir: a.output.clone(),
        base_url: a.base_url.clone(),
        model: a.model.clone(),
        concurrency: a.concurrency,
        rpm: a.rpm,
        tpm: a.tpm,
        timeout: a.timeout,
        ocr: a.ocr,
        escalate: a.escalate.clone(),
        checksum: a.checksum,
    }
}

/// Everything up to a complete, valid plan. No network.
pub(super) fn prepare(ctx: &Ctx, a: &RunArgs) -> Result<Prepared, ExitError> {
    let config = ctx.config(overrides(a))?;
    let set = skills::discover(config.config_dir.as_deref(), &ctx.cwd);
    for e in &set.broken {
        ctx.warn(&msg!("skipped skill file {e}"));
    }

    let mut requests = Vec::new();
    let expand = ExpandOptions {
        excludes: a.exclude.clone(),
        hidden: a.hidden,
        follow_links: a.follow_links,
        directories: false,
    };
    let mut given: BTreeMap<String, String> = BTreeMap::new();
    for raw in &a.args {
        let (k, v) = plan::parse_arg(raw)?;
        given.insert(k, v);
    }
    if let Some(file) = &a.jobs {
        if !a.inputs.is_empty() {
            return Err(ExitError::usage(msg!(
                "--jobs takes its inputs from the jobs file; give no INPUT"
            )));
        }
        for entry in plan::read_jobs_file(file)? {
            let mut args = given.clone();
            args.extend(entry.string_args()?);
            let mut ex = expand.clone();
            ex.excludes.extend(entry.exclude.iter().cloned());
            requests.push(PlanRequest {
                skill: entry.skill.clone(),
                inputs: entry.inputs.clone(),
                args,
                expand: ex,
            });
        }
    } else {
        let skill = a.skill.clone().unwrap_or_default();
        if a.inputs.is_empty() {
            return Err(ExitError::usage(msg!(
                "no inputs: give files, folders or quoted globs, e.g. `zhi run {skill} docs/`"
            )));
        }
        requests.push(PlanRequest {
            skill,
            inputs: a.inputs.clone(),
            args: given,
            expand,
        });
    }

    // Every skill the run uses must be valid, nested ones included, before anything runs.
    for r in &requests {
        if set.get(&r.skill).is_none() {
            let broken = set
                .broken
                .iter()
                .find(|e| e.file.contains(&format!("{}.y", r.skill)));
            return Err(ExitError::usage(match broken {
                Some(e) => msg!("skill `{}` cannot be loaded: {e}", one_line(&r.skill)),
                None => set.unknown(&r.skill),
            }));
        }
        let errors = set.check_graph(Some(&[r.skill.as_str()]));
        if let Some(e) = errors.first() {
            return Err(ExitError::usage(msg!(
                "skill `{}` is invalid: {e}",
                r.skill
            )));
        }
        check_mcp_servers(&set, &r.skill, &config)?;
    }
    // Unknown fields and clamped values warn (docs/skills.md#validation), never fail: the
    // warnings of the skills this run uses, nested ones included, each once.
    let used: Vec<&str> = requests.iter().map(|r| r.skill.as_str()).collect();
    for w in set.warnings_for_run(&used) {
        ctx.warn(w);
    }

    let output_dir = absolute(&ctx.cwd, &config.run.output_dir);
    plan::check_output_folder(&output_dir, &ctx.settings_files(Some(&config)))?;
    let shard = match a.shard {
        Some(s) => Some(s),
        None => plan::shard_from_env(&|k| std::env::var(k).ok())?,
    };
    let jobs = plan::build(&requests, &set, &ctx.cwd, &output_dir)?;
    let selection = Selection::new(jobs, shard, a.limit, &set)?;
    Ok(Prepared {
        config,
        skills: Arc::new(set),
        selection,
        output_dir,
    })
}

/// Every MCP server the skill and its nested skills name (`mcp:SERVER/TOOL`) must be one the
/// settings define: a skill cannot add a server (docs/mcp.md#skills-that-call-mcp-tools).
fn check_mcp_servers(
    set: &skills::SkillSet,
    skill: &str,
    config: &crate::config::Config,
) -> Result<(), ExitError> {
    match set
        .closure(skill)
        .into_iter()
        .find_map(|s| unknown_mcp_server(s, config))
    {
        Some(m) => Err(ExitError::usage(m)),
        None => Ok(()),
    }
}

/// Why skill `s` cannot run with these settings: an MCP server it names that they do not
/// define (`zhi run` and `zhi skills validate` say the same).
pub(super) fn unknown_mcp_server(
    s: &skills::Skill,
    config: &crate::config::Config,
) -> Option<String> {
    let defined = &config.run.mcp_servers;
    let t = s.mcp_tools().find(|t| !defined.contains_key(t.server))?;
    let (skill, server) = (&s.name, t.server);
    Some(if defined.is_empty() {
        msg!(
            "skill `{skill}` uses the MCP server `{server}`, but no settings file defines one under `mcp:`"
        )
    } else {
        let list = defined
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        msg!(
            "skill `{skill}` uses the MCP server `{server}`, which no settings file defines under `mcp:` (defined: {list})"
        )
    })
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// Everything `run` checks before it sends anything, and `plan` with it, so that a plan
/// refuses what the run would, with the same exit code (docs/cli.md#zhi-plan): the plan
/// itself (skills, arguments, inputs, jobs file, shard), the schemas given as arguments, the
/// escalation ladders and `--audit`'s need of one. No network.
fn preflight(ctx: &Ctx, a: &RunArgs) -> Result<Prepared, ExitError> {
    let prepared = prepare(ctx, a)?;
    let samples = &prepared.selection.outline.samples;
    check_schemas(samples, &prepared.skills)?;
    crate::run::preflight(
        &prepared.config,
        samples,
        &prepared.skills,
        a.audit.is_some(),
        &|k| std::env::var(k).ok(),
    )?;
    Ok(prepared)
}

/// `zhi run`.
pub(super) fn run(ctx: &Ctx, a: RunArgs) -> Result<Exit, ExitError> {
    let prepared = preflight(ctx, &a)?;
    prepared.config.api.require_key()?;
    ctx.warn_key(&prepared.config);
    if prepared.selection.is_empty() {
        // A shard may own no job of a small plan: that is success, with a manifest saying so.
        ctx.warn(&msg!("this shard has no jobs"));
    }
    let command = crate::secret::command_for_display(std::env::args());
    let cancel = tokio_util::sync::CancellationToken::new();
    let opts = crate::run::RunOptions {
        plan: prepared.selection,
        skills: prepared.skills,
        config: prepared.config,
        output_dir: prepared.output_dir.clone(),
        command,
        cancel,
        flags: Arc::new(run_flags(ctx, &a)),
    };
    let language = opts.config.ui.language;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ExitError::usage(msg!("cannot start the runtime: {e}")))?;
    let result = rt.block_on(crate::run::execute(opts))?;
    // Jobs still finishing their cancellation are not waited for.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    // `-q` keeps errors and the final summary (see `--help`).
    print_summary(&result, &ctx.cwd, language);
    if ctx.global.json {
        print_json(&serde_json::to_value(&result.manifest).unwrap_or_default());
    }
    Ok(result.exit)
}

/// The switches of `zhi run` that are not settings, as the executor and the tools take them.
fn run_flags(ctx: &Ctx, a: &RunArgs) -> RunFlags {
    RunFlags {
        force: a.force,
        max_failures: if a.fail_fast { Some(1) } else { a.max_failures },
        budget_tokens: a.budget_tokens,
        budget_cost: a.budget_cost,
        strict: a.strict,
        audit: a.audit.map(|size| crate::flags::AuditOptions {
            size,
            seed: a.audit_seed.unwrap_or(1),
            target: a.target,
            confidence: a
                .confidence
                .unwrap_or(crate::run::audit::DEFAULT_CONFIDENCE),
        }),
        allow_web: a.allow_web,
        submit_batch: (a.submit == SubmitWhen::Batch).then_some(BatchOptions {
            run_agent_jobs: a.agent_jobs == AgentJobs::Run,
        }),
        table_rows: a.rows.clone(),
        every_record: a.records == crate::cli::Records::All,
        progress: !ctx.global.no_progress && !ctx.global.quiet,
    }
}

/// One line (or a few, joined by `\n`) of the run's summary on stderr: ids, statuses and
/// messages in it come from servers and files, so it goes through the sanitiser.
fn say(text: &str) {
    eprintln!("{}", crate::sanitize::for_terminal(text));
}

/// The summary printed when the run ends, on a terminal and in plain mode alike.
fn print_summary(result: &crate::run::RunResult, cwd: &Path, lang: Lang) {
    eprintln!();
    for line in crate::manifest::summary::end_of_run_lines(&result.summary, cwd, lang) {
        say(&line);
    }
    if let Some(b) = &result.manifest.batches {
        print_batches(b, lang);
    }
}

/// What the run did with the provider's Batch API, and when to come back.
fn print_batches(b: &crate::manifest::BatchReport, lang: Lang) {
    let list = |ids: Vec<&str>| {
        let mut shown: Vec<&str> = ids.iter().take(5).copied().collect();
        if ids.len() > 5 {
            shown.push("…");
        }
        shown.join(", ")
    };
    if !b.collected.is_empty() || b.answers_used > 0 {
        let ids = list(b.collected.iter().map(String::as_str).collect());
        say(&t!(in lang;
            "  batches: collected {n} ({ids}); {answers} answer(s) used",
            n = b.collected.len(),
            ids = ids,
            answers = b.answers_used
        ));
    }
    if !b.submitted.is_empty() {
        let requests: u64 = b.submitted.iter().map(|s| s.requests).sum();
        let ids = list(b.submitted.iter().map(|s| s.batch_id.as_str()).collect());
        say(&t!(in lang;
            "  submitted {requests} request(s) in {n} batch(es) ({ids}) at the Batch API's half price\n  answers come within 24 h: run the same command again then to collect them (`zhi batch status` shows progress)",
            requests = requests,
            n = b.submitted.len(),
            ids = ids
        ));
    }
    if !b.waiting.is_empty() {
        let requests: u64 = b.waiting.iter().map(|w| w.requests).sum();
        let states = list(
            b.waiting
                .iter()
                .map(|w| w.status.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
        );
        say(&t!(in lang;
            "  still running: {n} batch(es), {requests} request(s) ({states}); run again later to collect them",
            n = b.waiting.len(),
            requests = requests,
            states = states
        ));
    }
    for p in &b.problems {
        let problem = crate::i18n::localize(p);
        say(&t!(in lang; "  batch: {problem}", problem = one_line(&problem)));
    }
}

/// `zhi plan`.
pub(super) fn plan(ctx: &Ctx, a: RunArgs) -> Result<Exit, ExitError> {
    let prepared = preflight(ctx, &a)?;
    let selection = &prepared.selection;
    plan::check_tpm(
        &prepared.config,
        &selection.outline.samples,
        &prepared.skills,
    )?;
    // A plan sends nothing, so a missing key does not stop it; the run would stop there.
    if let Err(e) = prepared.config.api.require_key() {
        ctx.warn(&msg!("`zhi run` would stop here (exit 2): {e}"));
    }
    // `zhi plan` says something of every job: it holds them.
    let jobs = selection
        .jobs()
        .collect::<Result<Vec<Job>, _>>()
        .map_err(|e| plan::PlanError::Spill(e.to_string()))?;
    let mut index = crate::plan::cache::CacheIndex::load(&prepared.output_dir);
    let models = &prepared.config.models;
    let skills = &prepared.skills;
    let model_of =
        |skill: &str| models.model_for(skills.get(skill).and_then(|s| s.model.as_deref()));
    let caches = crate::plan::cache::statuses(
        &jobs,
        &mut index,
        &prepared.skills,
        &model_of,
        &prepared.output_dir,
        crate::plan::cache::HashMode {
            force: a.force,
            checksum: prepared.config.run.checksum,
        },
    );
    let layout = crate::layout::OutputLayout::new(&prepared.output_dir);
    let lines: Vec<PlanLine> = jobs
        .iter()
        .zip(&caches)
        .map(|(job, cache)| plan_line(&prepared, &layout, job, cache))
        .collect();
    if ctx.global.json {
        for (job, line) in jobs.iter().zip(&lines) {
            let v = serde_json::json!({
                "job_id": job.id,
                "skill": job.skill,
                "inputs": job.input_paths().map(|(d, _)| d.to_string()).collect::<Vec<_>>(),
                "args": job.args,
                "status": line.status,
                "extraction": line.extraction,
                "estimated_tokens": line.tokens,
                "document_tokens": line.document_tokens,
                "estimated_from": line.from.as_str(),
                "pieces": line.pieces,
                "output_dir": job.output_rel.to_string_lossy(),
                "error": line.problem,
            });
            println!("{}", serde_json::to_string(&v).unwrap_or_default());
        }
    } else {
        print_plan(ctx, &prepared, &jobs, &lines);
    }
    Ok(Exit::Success)
}

/// What `zhi plan` says of one job.
struct PlanLine {
    status: PlanStatus,
    /// Why a `will-fail` job will fail.
    problem: Option<crate::error::JobError>,
    /// How the document is read (`text`, `pdf`, `ocr`, …).
    extraction: &'static str,
    /// Estimated prompt tokens of the job's requests: the document and what the run sends
    /// around it (docs/cli.md#zhi-plan).
    tokens: u64,
    /// Estimated tokens of the document alone.
    document_tokens: u64,
    /// What the estimate was made from.
    from: super::EstimatedFrom,
    /// How many pieces a long document is split into (docs/documents.md#splitting); 0 = too large
    /// to run.
    pieces: u64,
}

fn plan_line(
    prepared: &Prepared,
    layout: &crate::layout::OutputLayout,
    job: &Job,
    cache: &crate::plan::cache::JobCache,
) -> PlanLine {
    // An unchanged document is not read again: its tokens are what the run that read it
    // counted.
    let recorded = cache
        .previous
        .as_ref()
        .and_then(|p| p.input_tokens)
        .filter(|_| cache.unchanged);
    let super::Estimate {
        extraction,
        tokens,
        from,
    } = match recorded {
        Some(tokens) => super::Estimate {
            extraction: super::extraction_of(job),
            tokens,
            from: super::EstimatedFrom::Record,
        },
        None => super::estimate(job, &prepared.output_dir),
    };
    let skill = prepared.skills.get(&job.skill);
    let pieces = skill.map_or(1, |s| {
        let model = prepared.config.models.model_for(s.model.as_deref());
        let budget = u64::from(crate::chunk::piece_budget(
            prepared.config.request_budget(&model),
            s.piece_sizing(),
            s.direct_output(&job.args).is_some(),
        ));
        match (tokens <= budget, s.chunking) {
            (true, _) => 1,
            (false, crate::skills::Chunking::None) => 0,
            (false, _) => tokens.div_ceil(budget),
        }
    });
    // What the run checks before a job's first request, checked here the same way.
    let mut problem = plan::preflight(layout, job, cache);
    let mut status = PlanStatus::of(problem.as_ref(), cache);
    if extraction == "unsupported" && status != PlanStatus::WillFail {
        status = PlanStatus::WillFail;
        problem = Some(crate::error::JobError::new(
            crate::error::ErrorKind::UnsupportedType,
            unsupported(job),
        ));
    }
    PlanLine {
        status,
        problem,
        extraction,
        // A job that will fail sends nothing.
        tokens: match (status, skill) {
            (PlanStatus::WillFail, _) => 0,
            (_, Some(s)) => request_tokens(job, s, tokens, pieces),
            (_, None) => tokens,
        },
        document_tokens: tokens,
        from,
        pieces,
    }
}

/// The prompt tokens of a job's requests: its document, and what the run sends around it —
/// the system prompt and the user message's wrapping, an extraction's fields, a direct
/// request's task line, built as the run builds them — once per piece of a long document, and
/// for a workflow once per step.
fn request_tokens(job: &Job, skill: &crate::skills::Skill, document: u64, pieces: u64) -> u64 {
    let wrapping = crate::llm::text_tokens(&crate::run::first_request_text(job, skill, ""));
    let steps = skill.steps.len().max(1) as u64;
    (document + wrapping * pieces.max(1)) * steps
}

/// Why an unsupported file will fail, and the `--exclude` that leaves it out.
fn unsupported(job: &Job) -> String {
    let name = job
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let glob = match job.path.extension() {
        Some(ext) => format!("*.{}", ext.to_string_lossy()),
        None => name.unwrap_or_default(),
    };
    msg!("zhi cannot read this type of file (unsupported_type); --exclude '{glob}' leaves it out")
}

/// What sending the pending jobs' text costs on their own models (docs/escalation.md#cost):
/// `glm-4-flash ¥0, glm-4-air ¥0.0012`; `None` when no model has a price.
fn first_pass_cost(prepared: &Prepared, jobs: &[Job], lines: &[PlanLine]) -> Option<String> {
    let models = &prepared.config.models;
    let mut tokens: std::collections::BTreeMap<String, u64> = Default::default();
    for (job, line) in jobs.iter().zip(lines) {
        if line.status == PlanStatus::Pending {
            let skill = prepared.skills.get(&job.skill);
            let model = models.model_for(skill.and_then(|s| s.model.as_deref()));
            *tokens.entry(model).or_default() += line.tokens;
        }
    }
    let each: Vec<String> = tokens
        .iter()
        .filter_map(|(model, n)| {
            let price = models.prices.get(model)?;
            let cost = crate::manifest::Cost {
                amount: *n as f64 * price.input / 1e6,
                currency: price.currency.clone(),
            };
            Some(format!("{} {}", one_line(model), cost.show()))
        })
        .collect();
    (!each.is_empty()).then(|| each.join(", "))
}

/// The shortest prefix of the job ids, 8 characters or more, that tells them apart.
fn short_ids(jobs: &[Job]) -> usize {
    let ids: Vec<String> = jobs.iter().map(|j| j.id.to_string()).collect();
    let longest = ids.iter().map(String::len).max().unwrap_or(0);
    (8..longest)
        .find(|n| {
            let set: std::collections::HashSet<&str> =
                ids.iter().map(|id| &id[..(*n).min(id.len())]).collect();
            set.len() == ids.len()
        })
        .unwrap_or(longest)
}

/// The plan as a table, and what it adds up to, for a person.
fn print_plan(ctx: &Ctx, prepared: &Prepared, jobs: &[Job], lines: &[PlanLine]) {
    print_plan_table(jobs, lines);
    print_plan_notices(ctx, prepared, jobs, lines);
}

/// The plan's table on stdout, a `will-fail` job's reason under its row; a plan of one skill
/// names it once, after the table.
fn print_plan_table(jobs: &[Job], lines: &[PlanLine]) {
    use super::table::Fit;
    let short = short_ids(jobs);
    // A plan of one skill names it once, under the table; a jobs file's, on each row.
    let skills: std::collections::BTreeSet<&str> = jobs.iter().map(|j| &*j.skill).collect();
    let one_skill = if skills.len() == 1 {
        skills.first().copied()
    } else {
        None
    };
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .zip(lines)
        .map(|(job, line)| {
            let id = job.id.to_string();
            let mut row = vec![id[..short.min(id.len())].to_string()];
            if one_skill.is_none() {
                row.push(job.skill.to_string());
            }
            row.extend([
                one_line(&job.input),
                line.extraction.to_string(),
                line.status.to_string(),
                // A figure from the file's size is rough: marked.
                match line.from {
                    super::EstimatedFrom::Size => format!("~{}", line.tokens),
                    _ => line.tokens.to_string(),
                },
            ]);
            row
        })
        .collect();
    let notes: Vec<Option<String>> = lines
        .iter()
        .map(|l| {
            l.problem
                .as_ref()
                .map(|p| crate::i18n::localize(&p.message).into_owned())
        })
        .collect();
    let (job, skill, input, extract, status, tokens) = (
        t!("JOB"),
        t!("SKILL"),
        t!("INPUT"),
        t!("EXTRACT"),
        t!("STATUS"),
        t!("TOKENS"),
    );
    let mut headers = vec![job.as_str(), skill.as_str()];
    let mut fits = vec![Fit::Keep, Fit::Keep];
    if one_skill.is_some() {
        headers.pop();
        fits.pop();
    }
    headers.extend([
        input.as_str(),
        extract.as_str(),
        status.as_str(),
        tokens.as_str(),
    ]);
    fits.extend([Fit::Elide, Fit::Keep, Fit::Keep, Fit::Keep]);
    super::print_table_fitted(&headers, &fits, &rows, &notes);
    if let Some(skill) = one_skill {
        notice(&msg!("skill: {skill}", skill = one_line(skill)));
    }
}

/// What the plan adds up to, on stderr: the counts and tokens, the first pass's cost, long
/// documents, and (with `-v`) how the estimate is made.
fn print_plan_notices(ctx: &Ctx, prepared: &Prepared, jobs: &[Job], lines: &[PlanLine]) {
    let count = |s: PlanStatus| lines.iter().filter(|l| l.status == s).count();
    let (cached, failing) = (count(PlanStatus::Cached), count(PlanStatus::WillFail));
    let pending = lines.len() - cached - failing;
    let to_send: u64 = lines
        .iter()
        .filter(|l| l.status == PlanStatus::Pending)
        .map(|l| l.tokens)
        .sum();
    let shard_note = prepared
        .selection
        .shard
        .map(|s| msg!(" (shard {label})", label = s.label()))
        .unwrap_or_default();
    notice(&msg!(
        "{n} job(s): {cached} cached, {pending} to run, {failed} will fail; about {tokens} prompt tokens to send{shard_note}",
        n = lines.len(),
        failed = failing,
        tokens = to_send
    ));
    let quiet = ctx.global.quiet;
    if let Some(cost) = first_pass_cost(prepared, jobs, lines).filter(|_| !quiet) {
        notice(&msg!(
            "input cost of the first pass at the prices in use (answers and escalated steps not counted): {cost}"
        ));
    }
    for (job, line) in jobs.iter().zip(lines).filter(|_| !quiet) {
        let input = one_line(&job.input);
        match line.pieces {
            1 => {}
            0 => notice(&msg!(
                "{input}: too large for one request, and its skill does not split documents (too_large)"
            )),
            pieces => notice(&msg!(
                "{input}: long document, split into about {pieces} pieces"
            )),
        }
    }
    if ctx.global.verbose > 0 && !quiet {
        plan_labels(prepared, jobs);
    }
    // How the figure is made matters only when something is to be sent.
    if quiet || pending == 0 {
        return;
    }
    if ctx.global.verbose > 0 {
        notice(&msg!(
            "token estimate: each request's prompt as the run builds it (system prompt, the message around the document, an extraction's fields) and the text it sends (a PDF's text layer, an office file's text), CJK characters 1 token each, other text 1 token per 4 characters; a page without text (a scan, an image) {n} tokens; the answers are not counted",
            n = super::OCR_PAGE_TOKENS
        ));
    }
    if lines.iter().any(|l| l.from == super::EstimatedFrom::Size) {
        notice(&msg!(
            "~: estimated from the file's size (it could not be read here, or is a folder): a rough figure"
        ));
    }
}

/// `-v`: the labels the doubts look for each field of an extraction's schema under, once per
/// skill and schema (docs/extract.md#labels).
fn plan_labels(prepared: &Prepared, jobs: &[Job]) {
    let mut seen = std::collections::HashSet::new();
    for job in jobs {
        let Some(spec) = prepared.skills.get(&job.skill).and_then(|s| s.schema()) else {
            continue;
        };
        let schema = match spec {
            crate::skills::SchemaSpec::Inline(v) => Some(v.clone()),
            crate::skills::SchemaSpec::Arg(name) => job
                .arg_path(name)
                .and_then(|p| crate::skills::schema::read_schema_file(&p).ok()),
        };
        let Some(schema) = schema else { continue };
        if !seen.insert((job.skill.to_string(), schema.to_string())) {
            continue;
        }
        let fields = crate::skills::schema::fields(&schema);
        for (field, labels) in crate::judge::doubts::labels_of(&fields) {
            notice(&msg!(
                "{skill}: {field} is looked for under {labels}",
                skill = one_line(&job.skill),
                labels = one_line(&labels.join(", "))
            ));
        }
    }
}

/// An extraction skill's schema given as an argument is read before anything runs: a schema
/// that cannot be read or is not one stops the run with its file named (exit 2).
fn check_schemas(
    jobs: &[crate::plan::Job],
    skills: &crate::skills::SkillSet,
) -> Result<(), ExitError> {
    let mut seen = std::collections::HashSet::new();
    for job in jobs {
        let Some(crate::skills::SchemaSpec::Arg(name)) =
            skills.get(&job.skill).and_then(|s| s.schema())
        else {
            continue;
        };
        let Some(path) = job.arg_path(name) else {
            continue;
        };
        if seen.insert(path.clone()) {
            let value = crate::skills::schema::read_schema_file(&path).map_err(ExitError::usage)?;
            crate::agent::structured::Schema::new(value).map_err(|e| {
                let path = path.display();
                ExitError::usage(msg!("the schema {path} cannot be used: {e}"))
            })?;
        }
    }
    Ok(())
}
