//! clap's parse errors in Chinese, told apart by their kind and rebuilt from their context
//! (the argument, the value given, clap's suggestion), so the offending text is kept as typed.
//! `--help` and `--version` stay clap's own.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The Chinese text of a parse error, or `None` when clap's own output should be printed (help,
/// version, English, or an error this module does not know).
pub fn clap_message(e: &clap::Error) -> Option<String> {
    if super::lang() != super::Lang::Zh {
        return None;
    }
    let get = |kind| e.get(kind).map(text);
    let arg = get(ContextKind::InvalidArg).unwrap_or_default();
    let value = get(ContextKind::InvalidValue).unwrap_or_default();
    let mut lines = vec![match e.kind() {
        ErrorKind::InvalidValue if value.is_empty() => {
            format!("参数 '{arg}' 需要一个值，但没有给出")
        }
        ErrorKind::InvalidValue => format!("'{value}' 不是参数 '{arg}' 的有效值"),
        ErrorKind::ValueValidation => {
            let why = std::error::Error::source(e)
                .map(|s| format!("：{}", super::localize(&s.to_string())))
                .unwrap_or_default();
            format!("'{value}' 不是参数 '{arg}' 的有效值{why}")
        }
        ErrorKind::UnknownArgument => format!("无法识别的参数 '{arg}'"),
        ErrorKind::InvalidSubcommand => format!(
            "无法识别的子命令 '{}'",
            get(ContextKind::InvalidSubcommand).unwrap_or_default()
        ),
        ErrorKind::NoEquals => format!("参数 '{arg}' 的值须用等号给出"),
        ErrorKind::TooManyValues => format!("参数 '{arg}' 多出了值 '{value}'"),
        ErrorKind::TooFewValues | ErrorKind::WrongNumberOfValues => {
            let want = get(ContextKind::MinValues)
                .or_else(|| get(ContextKind::ExpectedNumValues))
                .unwrap_or_default();
            let got = get(ContextKind::ActualNumValues).unwrap_or_default();
            format!("参数 '{arg}' 需要 {want} 个值，只给出了 {got} 个")
        }
        ErrorKind::ArgumentConflict => match (get(ContextKind::PriorArg), arg.is_empty()) {
            (Some(prior), false) if prior == arg => format!("参数 '{arg}' 只能给出一次"),
            (Some(prior), false) => format!("参数 '{arg}' 不能与 '{prior}' 同时使用"),
            (None, false) => format!("参数 '{arg}' 不能与其他参数同时使用"),
            (_, true) => format!(
                "子命令 '{}' 不能与其他参数同时使用",
                get(ContextKind::InvalidSubcommand).unwrap_or_default()
            ),
        },
        ErrorKind::MissingRequiredArgument => format!("缺少必需的参数：{arg}"),
        ErrorKind::MissingSubcommand => format!(
            "'{}' 需要一个子命令",
            get(ContextKind::InvalidSubcommand).unwrap_or_default()
        ),
        ErrorKind::InvalidUtf8 => "参数不是有效的 UTF-8 文本".to_string(),
        _ => return None,
    }];
    // The values one may type, quoted as clap quotes the value that was typed.
    let quoted = |kind| match e.get(kind) {
        Some(ContextValue::Strings(list)) if !list.is_empty() => Some(
            list.iter()
                .map(|v| format!("'{v}'"))
                .collect::<Vec<_>>()
                .join("，"),
        ),
        Some(ContextValue::String(one)) => Some(format!("'{one}'")),
        _ => None,
    };
    if let Some(values) = quoted(ContextKind::ValidValue) {
        lines.push(format!("  [可选值：{values}]"));
    }
    if let Some(sub) = quoted(ContextKind::ValidSubcommand) {
        lines.push(format!("  [子命令：{sub}]"));
    }
    for kind in [
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
        ContextKind::SuggestedCommand,
    ] {
        // Several suggestions are each quoted, as clap does.
        if let Some(s) = quoted(kind) {
            lines.push(format!("  提示：也许想用的是 {s}"));
        }
    }
    if let Some(trailing) = get(ContextKind::TrailingArg) {
        lines.push(format!(
            "  提示：要把 '{trailing}' 当作值传入，请写成 '-- {trailing}'"
        ));
    }
    let mut out = format!("错误：{}", lines.join("\n"));
    if let Some(usage) = get(ContextKind::Usage) {
        let usage = usage.trim();
        let usage = usage.strip_prefix("Usage:").unwrap_or(usage).trim_start();
        out.push_str(&format!("\n\n用法：{usage}"));
    }
    out.push_str("\n\n更多信息请运行 '--help'。");
    Some(out)
}

/// A context value as plain text (no styles).
fn text(v: &ContextValue) -> String {
    match v {
        ContextValue::String(s) => s.clone(),
        ContextValue::Strings(list) => list.join(", "),
        ContextValue::StyledStr(s) => s.to_string(),
        ContextValue::StyledStrs(list) => list
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        ContextValue::Number(n) => n.to_string(),
        ContextValue::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}
