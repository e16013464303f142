//! The one integration-test binary: every module drives the real `zhi` binary or the library
//! through the product's contract (SPEC.md).

mod config_cli;
mod help;
mod skills_cli;
mod testenv;
