//! `zhi batch status` and `zhi batch cancel`: the output folder's batches for a person.
//!
//! `status` only reads the book (a run may be collecting at the same moment; it owns the
//! book); it asks the provider how running batches are when it can. `cancel` takes the run
//! lock, so it never races a cron run, and records what the provider said.

use super::{Ctx, print_json, print_table};
use crate::batch::record::{self, BatchRecord, Stage};
use crate::cli::BatchCommand;
use crate::config::{Config, Overrides};
use crate::exit::{Exit, ExitError};
use crate::i18n::notice;
use crate::llm::batch::{BatchApi, BatchInfo};
use crate::llm::{ChatClient, ClientSettings};
use crate::sanitize::one_line;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

pub(super) fn run(ctx: &Ctx, cmd: BatchCommand) -> Result<Exit, ExitError> {
    match cmd {
        BatchCommand::Status { output, base_url } => status(ctx, output, base_url),
        BatchCommand::Cancel {
            batch,
            output,
            base_url,
        } => cancel(ctx, batch.as_deref(), output, base_url),
    }
}

struct Book {
    config: Config,
    out: PathBuf,
    dir: PathBuf,
    records: Vec<BatchRecord>,
}

fn open(ctx: &Ctx, output: Option<PathBuf>, base_url: Option<String>) -> Result<Book, ExitError> {
    let config = ctx.config(Overrides {
        output_dir: output,
        base_url,
        ..Overrides::default()
    })?;
    // `batch status` asks the provider, `batch cancel` tells it: both send the key.
    ctx.warn_key(&config);
    let out = if config.run.output_dir.is_absolute() {
        config.run.output_dir.clone()
    } else {
        ctx.cwd.join(&config.run.output_dir)
    };
    let dir = crate::layout::OutputLayout::new(&out).batches();
    let records = record::load_all_readonly(&dir, &mut |w| ctx.warn(&w));
    Ok(Book {
        config,
        out,
        dir,
        records,
    })
}

fn api(config: &Config) -> Result<BatchApi, ExitError> {
    let client = ChatClient::new(ClientSettings::from(config))
        .map_err(|e| ExitError::usage(e.to_string()))?;
    Ok(BatchApi::new(client))
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ExitError::usage(msg!("cannot start the runtime: {e}")))
}

fn status(ctx: &Ctx, output: Option<PathBuf>, base_url: Option<String>) -> Result<Exit, ExitError> {
    let mut book = open(ctx, output, base_url)?;
    let ours = crate::secret::url_for_display(&book.config.api.base_url);
    let can_ask = book.config.api.key.is_some() || book.config.api.base_url_is_local();
    let running: Vec<usize> = (0..book.records.len())
        .filter(|i| {
            let r = &book.records[*i];
            r.stage == Stage::Submitted && r.base_url == ours
        })
        .collect();
    if can_ask && !running.is_empty() {
        let api = api(&book.config)?;
        let cancel = CancellationToken::new();
        let rt = runtime()?;
        for i in running {
            let r = &mut book.records[i];
            let id = r.batch_id.clone().unwrap_or_default();
            match rt.block_on(api.get(&id, &cancel)) {
                Ok(info) => live(r, &info),
                Err(e) => ctx.warn(&msg!("cannot ask the provider about batch {id}: {e}")),
            }
        }
    }
    if ctx.global.json {
        print_json(&serde_json::to_value(&book.records).unwrap_or_default());
        return Ok(Exit::Success);
    }
    if book.records.is_empty() {
        notice(&msg!(
            "{} has no batches (`zhi run … --submit batch` submits them)",
            book.out.display()
        ));
        return Ok(Exit::Success);
    }
    let rows: Vec<Vec<String>> = book
        .records
        .iter()
        .map(|r| {
            let counts = r.request_counts.unwrap_or_default();
            let waiting = r
                .requests
                .iter()
                .filter(|q| !r.settled_jobs.contains(&q.job_id))
                .count();
            vec![
                r.label().to_string(),
                r.model.clone(),
                r.stage.as_str().to_string(),
                r.status.clone().unwrap_or_else(|| "-".into()),
                r.requests.len().to_string(),
                counts.completed.to_string(),
                counts.failed.to_string(),
                if r.stage == Stage::Collected {
                    waiting.to_string()
                } else {
                    "-".into()
                },
                r.created_at.to_string(),
            ]
        })
        .collect();
    print_table(
        &[
            &t!("BATCH"),
            &t!("MODEL"),
            &t!("STAGE"),
            &t!("STATUS"),
            &t!("REQUESTS"),
            &t!("COMPLETED"),
            &t!("FAILED"),
            &t!("UNUSED"),
            &t!("CREATED"),
        ],
        &rows,
    );
    let running = book
        .records
        .iter()
        .filter(|r| r.stage == Stage::Submitted)
        .count();
    if running > 0 {
        notice(&msg!(
            "{running} batch(es) running; `zhi run` with the same arguments collects them once they end (within 24 h)"
        ));
    }
    if book.records.iter().any(|r| r.base_url != ours) {
        notice(&msg!(
            "batches submitted to another API base are shown as last seen; give --base-url to ask about them"
        ));
    }
    if !can_ask {
        notice(&msg!(
            "no API key: statuses are as the last run saw them (set {} to ask the provider)",
            book.config.api.key_env
        ));
    }
    Ok(Exit::Success)
}

/// What the provider says now, shown (not written: the runs own the book).
fn live(r: &mut BatchRecord, info: &BatchInfo) {
    r.status = Some(info.status.clone());
    r.request_counts = info.request_counts;
}

fn cancel(
    ctx: &Ctx,
    batch: Option<&str>,
    output: Option<PathBuf>,
    base_url: Option<String>,
) -> Result<Exit, ExitError> {
    let book = open(ctx, output, base_url)?;
    book.config.api.require_key()?;
    let layout = crate::layout::OutputLayout::new(&book.out);
    if !layout.zhi_dir().is_dir() {
        return Err(ExitError::usage(msg!(
            "{} has no batches",
            book.out.display()
        )));
    }
    let _lock = crate::run::lock::RunLock::acquire(
        &layout,
        &format!("batch-cancel-{}", std::process::id()),
    )?;
    // Read again under the lock: a run may have just changed the book.
    let records = record::load_all_readonly(&book.dir, &mut |w| ctx.warn(&w));
    let ours = crate::secret::url_for_display(&book.config.api.base_url);
    let targets: Vec<BatchRecord> = records
        .into_iter()
        .filter(|r| r.stage == Stage::Submitted)
        .filter(|r| match batch {
            Some(b) => r.batch_id.as_deref() == Some(b) || r.local_id == b,
            None => true,
        })
        .collect();
    if targets.is_empty() {
        return match batch {
            Some(b) => Err(ExitError::usage(msg!(
                "no running batch `{}` in {} (`zhi batch status` lists them)",
                one_line(b),
                book.out.display()
            ))),
            None => {
                notice(&msg!("no running batch in {}", book.out.display()));
                Ok(Exit::Success)
            }
        };
    }
    let api = api(&book.config)?;
    let rt = runtime()?;
    let token = CancellationToken::new();
    let mut failed = false;
    for mut r in targets {
        let id = r.batch_id.clone().unwrap_or_default();
        if r.base_url != ours {
            ctx.warn(&msg!(
                "batch {id} belongs to {}; give --base-url {} to cancel it",
                r.base_url,
                r.base_url
            ));
            failed = true;
            continue;
        }
        match rt.block_on(api.cancel(&id, &token)) {
            Ok(info) => {
                live(&mut r, &info);
                save(&book.out, &book.dir, &r)?;
                notice(&msg!(
                    "batch {id}: {} ({} request(s)); the next `zhi run` collects what it answered and does the rest again",
                    one_line(&info.status),
                    r.requests.len()
                ));
            }
            Err(e) => {
                crate::i18n::error(&msg!("cannot cancel batch {id}: {e}"));
                failed = true;
            }
        }
    }
    Ok(if failed {
        Exit::TempFail
    } else {
        Exit::Success
    })
}

fn save(out: &Path, dir: &Path, r: &BatchRecord) -> Result<(), ExitError> {
    record::save(out, dir, r).map_err(|e| {
        ExitError::new(
            Exit::TempFail,
            msg!("cannot write the record of batch {}: {e}", r.local_id),
        )
    })
}
