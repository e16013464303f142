//! Log lines (`tracing`) in Chinese: the level as a word (`警告：`) instead of `WARN`. The
//! English lines keep `tracing`'s own format; the message and field names of both are
//! translated by the field formatter `main` installs ([`super::localize`], [`super::field_name`]).

use std::fmt;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// `警告：消息 任务=a.pdf`: one line per event, no time, no target, no colors.
pub struct ChineseLines;

impl<S, N> FormatEvent<S, N> for ChineseLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "错误",
            Level::WARN => "警告",
            Level::INFO => "信息",
            Level::DEBUG => "调试",
            Level::TRACE => "跟踪",
        };
        write!(writer, "{level}：")?;
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
