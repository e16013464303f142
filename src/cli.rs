//! Command-line definitions (clap derive) and nothing else: raw flags as the user typed them.
//! Validation and defaults live in `config`, so there is one place that decides a setting.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Run LLM skills over whole folders of documents.
///
/// zhi applies a skill (a YAML-defined agent: a prompt, tools, a turn limit) to every document
/// under the inputs, one agent run per document, concurrently and rate-limited. Originals are
/// never modified, every write stays inside the output folder, and every run leaves a manifest
/// saying what happened to each document.
#[derive(Debug, Parser)]
#[command(name = "zhi", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command takes.
#[derive(Debug, Args, Clone, Default)]
pub struct GlobalArgs {
    /// More output: -v shows each job's turns and tool calls, -vv debug logs
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Only errors and the final summary
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Read settings from this file instead of ./zhi.yaml and ~/.config/zhi/config.yaml
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Machine-readable JSON on stdout; human output goes to stderr
    #[arg(long, global = true)]
    pub json: bool,

    /// No progress bar or progress lines
    #[arg(long, global = true)]
    pub no_progress: bool,

    /// When to use colors (NO_COLOR is honoured)
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, show, validate and create skills
    #[command(subcommand)]
    Skills(SkillsCommand),

    /// Show the resolved configuration
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List builtin and user skills (name, source, model, tools, description)
    List,
    /// Show one resolved skill, with its nested skills as a tree
    Show {
        /// Skill name
        name: String,
    },
    /// Validate skill files (default: every discovered skill); exit 2 if any is invalid
    Validate {
        /// Skill files to check; without any, every builtin and user skill is checked
        files: Vec<PathBuf>,
    },
    /// Write a commented skill template to ./.zhi/skills/NAME.yaml (never overwrites)
    New {
        /// Name of the new skill
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the resolved settings and where each came from (the API key is redacted)
    Show,
}
