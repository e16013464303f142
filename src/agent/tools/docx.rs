//! `.docx` output: the model's markdown as a minimal but real WordprocessingML package that
//! Word and LibreOffice open: headings as Heading 1–3 styles (so they show in the navigation
//! pane), bullet and numbered lists, tables, quotes, code blocks, bold, italic and inline code.
//!
//! Everything the model sends is escaped and stripped of characters XML cannot hold; a document
//! can never inject markup into the package.

use std::io::{Cursor, Write};

use serde_json::Value;
use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

const DOCX_SHAPE: &str = r##"{"content": "# Title\n\nMarkdown text"}"##;
/// The text width of an A4 page with 1-inch margins, in twentieths of a point.
const TEXT_WIDTH_TWIPS: usize = 9026;
const MAX_LIST_LEVEL: usize = 2;

pub(super) fn render(content: &Value) -> Result<Vec<u8>, String> {
    let markdown = markdown_of(content)?;
    let blocks = parse(&markdown);
    let ordered_lists = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Item {
                list: Some(list), ..
            } => Some(*list + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let document = document_xml(&blocks);
    let numbering = numbering_xml(ordered_lists);
    package(&document, &numbering).map_err(|e| format!("the document could not be built: {e}"))
}

/// The markdown in `content`: a string, `{content: "..."}`, or a JSON string holding that.
fn markdown_of(content: &Value) -> Result<String, String> {
    let from_object = |map: &serde_json::Map<String, Value>| {
        ["content", "markdown", "text"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str).map(str::to_string))
    };
    match content {
        Value::String(s) => {
            if s.trim_start().starts_with('{')
                && let Ok(Value::Object(map)) = serde_json::from_str::<Value>(s)
                && let Some(md) = from_object(&map)
            {
                return Ok(md);
            }
            Ok(s.clone())
        }
        Value::Object(map) => from_object(map).ok_or_else(|| {
            format!("`content` for a .docx file must hold markdown, like {DOCX_SHAPE}")
        }),
        _ => Err(format!(
            "`content` for a .docx file must hold markdown, like {DOCX_SHAPE}"
        )),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Block {
    Heading(usize, String),
    /// Lines of one paragraph, kept as line breaks.
    Paragraph(Vec<String>),
    /// A list item; `list` numbers the ordered list it belongs to (bullets have none).
    Item {
        level: usize,
        list: Option<usize>,
        text: String,
    },
    Quote(String),
    Code(Vec<String>),
    /// Rows of cells; the first row is the header.
    Table(Vec<Vec<String>>),
    Rule,
}

fn parse(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut paragraph: Vec<String> = Vec::new();
    let mut code: Option<Vec<String>> = None;
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut ordered_lists = 0usize;
    // The ordered list the last item belonged to, while a list is running.
    let mut current_list: Option<usize> = None;

    for line in markdown.lines() {
        let trimmed = line.trim();
        if let Some(lines) = code.as_mut() {
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                blocks.push(Block::Code(std::mem::take(lines)));
                code = None;
            } else {
                lines.push(line.to_string());
            }
            continue;
        }
        if trimmed.starts_with('|') {
            if !paragraph.is_empty() {
                flush(&mut blocks, &mut paragraph, &mut Vec::new());
            }
            if !is_separator_row(trimmed) {
                table.push(table_cells(trimmed));
            }
            current_list = None;
            continue;
        }
        if !table.is_empty() {
            flush(&mut blocks, &mut paragraph, &mut table);
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            flush(&mut blocks, &mut paragraph, &mut table);
            code = Some(Vec::new());
            current_list = None;
            continue;
        }
        if trimmed.is_empty() {
            flush(&mut blocks, &mut paragraph, &mut table);
            continue;
        }
        if let Some((level, text)) = heading(trimmed) {
            flush(&mut blocks, &mut paragraph, &mut table);
            blocks.push(Block::Heading(level, text));
            current_list = None;
            continue;
        }
        if is_rule(trimmed) {
            flush(&mut blocks, &mut paragraph, &mut table);
            blocks.push(Block::Rule);
            current_list = None;
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let level = (indent / 2).min(MAX_LIST_LEVEL);
        if let Some(text) = bullet(trimmed) {
            flush(&mut blocks, &mut paragraph, &mut table);
            if level == 0 {
                current_list = None;
            }
            blocks.push(Block::Item {
                level,
                list: None,
                text: text.to_string(),
            });
            continue;
        }
        if let Some(text) = ordered(trimmed) {
            flush(&mut blocks, &mut paragraph, &mut table);
            let list = list_of(current_list, &mut ordered_lists);
            current_list = Some(list);
            blocks.push(Block::Item {
                level,
                list: Some(list),
                text: text.to_string(),
            });
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix('>') {
            flush(&mut blocks, &mut paragraph, &mut table);
            blocks.push(Block::Quote(rest.trim().to_string()));
            current_list = None;
            continue;
        }
        current_list = None;
        paragraph.push(trimmed.to_string());
    }
    if let Some(lines) = code {
        blocks.push(Block::Code(lines));
    }
    flush(&mut blocks, &mut paragraph, &mut table);
    blocks
}

/// The paragraph and the table being gathered, ended: each becomes a block when it holds lines.
fn flush(blocks: &mut Vec<Block>, paragraph: &mut Vec<String>, table: &mut Vec<Vec<String>>) {
    if !paragraph.is_empty() {
        blocks.push(Block::Paragraph(std::mem::take(paragraph)));
    }
    if !table.is_empty() {
        blocks.push(Block::Table(std::mem::take(table)));
    }
}

/// The ordered list an item belongs to: the running one, or a new one after the
/// `ordered_lists` so far (counted here).
fn list_of(current_list: Option<usize>, ordered_lists: &mut usize) -> usize {
    match current_list {
        Some(list) => list,
        None => {
            *ordered_lists += 1;
            *ordered_lists - 1
        }
    }
}

fn heading(line: &str) -> Option<(usize, String)> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim().to_string();
    Some((hashes.min(3), text))
}

fn is_rule(line: &str) -> bool {
    let marks: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    marks.len() >= 3
        && ['-', '*', '_']
            .iter()
            .any(|m| marks.chars().all(|c| c == *m))
}

fn bullet(line: &str) -> Option<&str> {
    ["- ", "* ", "+ ", "• "]
        .iter()
        .find_map(|marker| line.strip_prefix(marker))
        .map(str::trim)
}

fn ordered(line: &str) -> Option<&str> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let rest = &line[digits..];
    let rest = rest.strip_prefix('.').or_else(|| rest.strip_prefix(')'))?;
    rest.starts_with(' ').then(|| rest.trim())
}

fn is_separator_row(line: &str) -> bool {
    let cells = table_cells(line);
    !cells.is_empty()
        && cells.iter().all(|c| {
            let c = c.trim_matches(':');
            !c.is_empty() && c.chars().all(|ch| ch == '-')
        })
}

fn table_cells(line: &str) -> Vec<String> {
    let inner = line.trim();
    let inner = inner.strip_prefix('|').unwrap_or(inner);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cell.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cell).trim().to_string()),
            c => cell.push(c),
        }
    }
    cells.push(cell.trim().to_string());
    cells
}

/// A stretch of text with one look.
#[derive(Debug, Clone, PartialEq, Default)]
struct Run {
    text: String,
    bold: bool,
    italic: bool,
    code: bool,
}

/// Inline markdown: `**bold**`, `__bold__`, `*italic*`, `` `code` ``, `[text](url)`, escapes.
/// A marker without its closing partner is plain text.
fn inline(text: &str) -> Vec<Run> {
    let chars: Vec<char> = text.chars().collect();
    let mut runs = Vec::new();
    let mut buf = String::new();
    let (mut bold, mut italic) = (false, false);
    // A closing marker: unescaped, right after a non-space character.
    let closes_later = |from: usize, pattern: &[char]| {
        (from.max(1)..chars.len().saturating_sub(pattern.len() - 1)).any(|j| {
            chars[j..j + pattern.len()] == *pattern
                && !chars[j - 1].is_whitespace()
                && chars[j - 1] != '\\'
        })
    };
    let flush = |buf: &mut String, runs: &mut Vec<Run>, bold: bool, italic: bool| {
        if !buf.is_empty() {
            runs.push(Run {
                text: std::mem::take(buf),
                bold,
                italic,
                code: false,
            });
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\\' && next.is_some_and(|n| n.is_ascii_punctuation()) {
            buf.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '`'
            && let Some(end) = (i + 1..chars.len()).find(|j| chars[*j] == '`')
        {
            flush(&mut buf, &mut runs, bold, italic);
            runs.push(Run {
                text: chars[i + 1..end].iter().collect(),
                bold,
                italic,
                code: true,
            });
            i = end + 1;
            continue;
        }
        if (c == '*' || c == '_') && next == Some(c) && (bold || closes_later(i + 2, &[c, c])) {
            flush(&mut buf, &mut runs, bold, italic);
            bold = !bold;
            i += 2;
            continue;
        }
        if c == '*'
            && (italic || (next.is_some_and(|n| !n.is_whitespace()) && closes_later(i + 2, &['*'])))
        {
            flush(&mut buf, &mut runs, bold, italic);
            italic = !italic;
            i += 1;
            continue;
        }
        let image = c == '!' && next == Some('[');
        if (c == '[' || image)
            && let Some((label, url, end)) = link(&chars, if image { i + 1 } else { i })
        {
            buf.push_str(&label);
            if !image && !url.is_empty() && url != label {
                buf.push_str(&format!(" ({url})"));
            }
            i = end;
            continue;
        }
        buf.push(c);
        i += 1;
    }
    flush(&mut buf, &mut runs, bold, italic);
    runs
}

/// `[label](url)` starting at `start` (the `[`): the label, the url and the index after `)`.
fn link(chars: &[char], start: usize) -> Option<(String, String, usize)> {
    let close = (start + 1..chars.len()).find(|j| chars[*j] == ']')?;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let end = (close + 2..chars.len()).find(|j| chars[*j] == ')')?;
    Some((
        chars[start + 1..close].iter().collect(),
        chars[close + 2..end].iter().collect(),
        end + 1,
    ))
}

const W_NS: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const R_NS: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const XML_DECL: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#;

fn document_xml(blocks: &[Block]) -> String {
    let mut body = String::new();
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                paragraph(
                    &mut body,
                    Some(&format!("Heading{level}")),
                    None,
                    &[inline(text)],
                );
            }
            Block::Paragraph(lines) => {
                let lines: Vec<Vec<Run>> = lines.iter().map(|l| inline(l)).collect();
                paragraph(&mut body, None, None, &lines);
            }
            Block::Item { level, list, text } => {
                let num_id = list.map_or(1, |l| l + 2);
                paragraph(
                    &mut body,
                    Some("ListParagraph"),
                    Some((*level, num_id)),
                    &[inline(text)],
                );
            }
            Block::Quote(text) => paragraph(&mut body, Some("Quote"), None, &[inline(text)]),
            Block::Code(lines) => {
                for line in lines {
                    let run = Run {
                        text: line.clone(),
                        ..Run::default()
                    };
                    paragraph(&mut body, Some("Code"), None, &[vec![run]]);
                }
            }
            Block::Table(rows) => table_xml(&mut body, rows),
            Block::Rule => {
                body.push_str(
                    r#"<w:p><w:pPr><w:pBdr><w:bottom w:val="single" w:sz="6" w:space="1" w:color="999999"/></w:pBdr></w:pPr></w:p>"#,
                );
            }
        }
    }
    // A body must not end with a table, and an empty document still needs a paragraph.
    if blocks.is_empty() || matches!(blocks.last(), Some(Block::Table(_))) {
        body.push_str("<w:p/>");
    }
    format!(
        "{XML_DECL}<w:document xmlns:w=\"{W_NS}\" xmlns:r=\"{R_NS}\"><w:body>{body}\
         <w:sectPr><w:pgSz w:w=\"11906\" w:h=\"16838\"/><w:pgMar w:top=\"1440\" \
         w:right=\"1440\" w:bottom=\"1440\" w:left=\"1440\" w:header=\"708\" w:footer=\"708\" \
         w:gutter=\"0\"/></w:sectPr></w:body></w:document>"
    )
}

/// One paragraph; `lines` are separated by line breaks.
fn paragraph(
    out: &mut String,
    style: Option<&str>,
    list: Option<(usize, usize)>,
    lines: &[Vec<Run>],
) {
    out.push_str("<w:p>");
    if style.is_some() || list.is_some() {
        out.push_str("<w:pPr>");
        if let Some(style) = style {
            out.push_str(&format!("<w:pStyle w:val=\"{style}\"/>"));
        }
        if let Some((level, num_id)) = list {
            out.push_str(&format!(
                "<w:numPr><w:ilvl w:val=\"{level}\"/><w:numId w:val=\"{num_id}\"/></w:numPr>"
            ));
        }
        out.push_str("</w:pPr>");
    }
    for (i, runs) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str("<w:r><w:br/></w:r>");
        }
        for run in runs {
            run_xml(out, run);
        }
    }
    out.push_str("</w:p>");
}

fn run_xml(out: &mut String, run: &Run) {
    out.push_str("<w:r>");
    if run.bold || run.italic || run.code {
        out.push_str("<w:rPr>");
        if run.code {
            out.push_str(r#"<w:rFonts w:ascii="Consolas" w:hAnsi="Consolas" w:cs="Consolas"/>"#);
        }
        if run.bold {
            out.push_str("<w:b/>");
        }
        if run.italic {
            out.push_str("<w:i/>");
        }
        out.push_str("</w:rPr>");
    }
    for (i, piece) in run.text.split('\t').enumerate() {
        if i > 0 {
            out.push_str("<w:tab/>");
        }
        if !piece.is_empty() {
            out.push_str("<w:t xml:space=\"preserve\">");
            out.push_str(&escape(piece));
            out.push_str("</w:t>");
        }
    }
    out.push_str("</w:r>");
}

fn table_xml(out: &mut String, rows: &[Vec<String>]) {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let width = TEXT_WIDTH_TWIPS / columns;
    out.push_str("<w:tbl><w:tblPr><w:tblW w:w=\"5000\" w:type=\"pct\"/><w:tblBorders>");
    for edge in ["top", "left", "bottom", "right", "insideH", "insideV"] {
        out.push_str(&format!(
            "<w:{edge} w:val=\"single\" w:sz=\"4\" w:space=\"0\" w:color=\"999999\"/>"
        ));
    }
    out.push_str("</w:tblBorders></w:tblPr><w:tblGrid>");
    for _ in 0..columns {
        out.push_str(&format!("<w:gridCol w:w=\"{width}\"/>"));
    }
    out.push_str("</w:tblGrid>");
    for (r, row) in rows.iter().enumerate() {
        out.push_str("<w:tr>");
        if r == 0 {
            out.push_str("<w:trPr><w:tblHeader/></w:trPr>");
        }
        for c in 0..columns {
            out.push_str(&format!(
                "<w:tc><w:tcPr><w:tcW w:w=\"{width}\" w:type=\"dxa\"/></w:tcPr>"
            ));
            let mut runs = inline(row.get(c).map(String::as_str).unwrap_or(""));
            if r == 0 {
                for run in &mut runs {
                    run.bold = true;
                }
            }
            paragraph(out, None, None, &[runs]);
            out.push_str("</w:tc>");
        }
        out.push_str("</w:tr>");
    }
    out.push_str("</w:tbl>");
}

/// Escape for XML text and attributes, dropping characters XML 1.0 cannot hold.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

fn numbering_xml(ordered_lists: usize) -> String {
    let level = |ilvl: usize, format: &str, text: &str| {
        format!(
            "<w:lvl w:ilvl=\"{ilvl}\"><w:start w:val=\"1\"/><w:numFmt w:val=\"{format}\"/>\
             <w:lvlText w:val=\"{text}\"/><w:lvlJc w:val=\"left\"/><w:pPr><w:ind w:left=\"{}\" \
             w:hanging=\"360\"/></w:pPr></w:lvl>",
            720 * (ilvl + 1)
        )
    };
    let mut xml = format!("{XML_DECL}<w:numbering xmlns:w=\"{W_NS}\">");
    xml.push_str(
        "<w:abstractNum w:abstractNumId=\"0\"><w:multiLevelType w:val=\"hybridMultilevel\"/>",
    );
    for (ilvl, glyph) in ["•", "◦", "▪"].iter().enumerate() {
        xml.push_str(&level(ilvl, "bullet", glyph));
    }
    xml.push_str("</w:abstractNum>");
    xml.push_str(
        "<w:abstractNum w:abstractNumId=\"1\"><w:multiLevelType w:val=\"hybridMultilevel\"/>",
    );
    for (ilvl, format) in ["decimal", "lowerLetter", "lowerRoman"].iter().enumerate() {
        xml.push_str(&level(ilvl, format, &format!("%{}.", ilvl + 1)));
    }
    xml.push_str("</w:abstractNum>");
    xml.push_str("<w:num w:numId=\"1\"><w:abstractNumId w:val=\"0\"/></w:num>");
    // Each ordered list gets its own instance so its numbering starts again at 1.
    for list in 0..ordered_lists {
        xml.push_str(&format!(
            "<w:num w:numId=\"{}\"><w:abstractNumId w:val=\"1\"/><w:lvlOverride w:ilvl=\"0\">\
             <w:startOverride w:val=\"1\"/></w:lvlOverride></w:num>",
            list + 2
        ));
    }
    xml.push_str("</w:numbering>");
    xml
}

fn styles_xml() -> String {
    let heading = |n: usize, size: usize| {
        format!(
            "<w:style w:type=\"paragraph\" w:styleId=\"Heading{n}\"><w:name w:val=\"heading {n}\"/>\
             <w:basedOn w:val=\"Normal\"/><w:next w:val=\"Normal\"/><w:uiPriority w:val=\"9\"/>\
             <w:qFormat/><w:pPr><w:keepNext/><w:keepLines/><w:spacing w:before=\"{}\" \
             w:after=\"120\"/><w:outlineLvl w:val=\"{}\"/></w:pPr><w:rPr><w:b/><w:bCs/>\
             <w:color w:val=\"1F3864\"/><w:sz w:val=\"{size}\"/><w:szCs w:val=\"{size}\"/></w:rPr>\
             </w:style>",
            if n == 1 { 360 } else { 240 },
            n - 1
        )
    };
    format!(
        "{XML_DECL}<w:styles xmlns:w=\"{W_NS}\"><w:docDefaults><w:rPrDefault><w:rPr>\
         <w:rFonts w:ascii=\"Calibri\" w:hAnsi=\"Calibri\" w:eastAsia=\"SimSun\" w:cs=\"Calibri\"/>\
         <w:sz w:val=\"22\"/><w:szCs w:val=\"22\"/><w:lang w:val=\"en-US\" w:eastAsia=\"zh-CN\"/>\
         </w:rPr></w:rPrDefault><w:pPrDefault><w:pPr><w:spacing w:after=\"120\" w:line=\"276\" \
         w:lineRule=\"auto\"/></w:pPr></w:pPrDefault></w:docDefaults>\
         <w:style w:type=\"paragraph\" w:default=\"1\" w:styleId=\"Normal\"><w:name w:val=\"Normal\"/>\
         <w:qFormat/></w:style>\
         {}{}{}\
         <w:style w:type=\"paragraph\" w:styleId=\"ListParagraph\"><w:name w:val=\"List Paragraph\"/>\
         <w:basedOn w:val=\"Normal\"/><w:uiPriority w:val=\"34\"/><w:qFormat/><w:pPr>\
         <w:spacing w:after=\"60\"/><w:ind w:left=\"720\"/><w:contextualSpacing/></w:pPr></w:style>\
         <w:style w:type=\"paragraph\" w:styleId=\"Quote\"><w:name w:val=\"Quote\"/>\
         <w:basedOn w:val=\"Normal\"/><w:next w:val=\"Normal\"/><w:uiPriority w:val=\"29\"/>\
         <w:qFormat/><w:pPr><w:pBdr><w:left w:val=\"single\" w:sz=\"12\" w:space=\"8\" \
         w:color=\"AAAAAA\"/></w:pBdr><w:ind w:left=\"360\"/></w:pPr><w:rPr><w:i/>\
         <w:color w:val=\"555555\"/></w:rPr></w:style>\
         <w:style w:type=\"paragraph\" w:styleId=\"Code\"><w:name w:val=\"Code\"/>\
         <w:basedOn w:val=\"Normal\"/><w:pPr><w:shd w:val=\"clear\" w:color=\"auto\" \
         w:fill=\"F2F2F2\"/><w:spacing w:after=\"0\" w:line=\"240\" w:lineRule=\"auto\"/></w:pPr>\
         <w:rPr><w:rFonts w:ascii=\"Consolas\" w:hAnsi=\"Consolas\" w:cs=\"Consolas\"/>\
         <w:sz w:val=\"20\"/><w:szCs w:val=\"20\"/></w:rPr></w:style>\
         </w:styles>",
        heading(1, 32),
        heading(2, 28),
        heading(3, 24)
    )
}

const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/><Override PartName="/word/numbering.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.numbering+xml"/></Types>"#;

const PACKAGE_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;

const DOCUMENT_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/numbering" Target="numbering.xml"/></Relationships>"#;

fn package(document: &str, numbering: &str) -> zip::result::ZipResult<Vec<u8>> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let styles = styles_xml();
    let parts: [(&str, &str); 6] = [
        ("[Content_Types].xml", CONTENT_TYPES),
        ("_rels/.rels", PACKAGE_RELS),
        ("word/document.xml", document),
        ("word/_rels/document.xml.rels", DOCUMENT_RELS),
        ("word/styles.xml", &styles),
        ("word/numbering.xml", numbering),
    ];
    for (name, text) in parts {
        zip.start_file(name, options)?;
        zip.write_all(text.as_bytes())?;
    }
    Ok(zip.finish()?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn parts(bytes: &[u8]) -> Vec<(String, String)> {
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut out = Vec::new();
        for i in 0..archive.len() {
            let mut file = archive.by_index(i).unwrap();
            let mut text = String::new();
            file.read_to_string(&mut text).unwrap();
            out.push((file.name().unwrap().to_string(), text));
        }
        out
    }

    /// Every part is well-formed XML.
    fn assert_well_formed(bytes: &[u8]) {
        for (name, text) in parts(bytes) {
            let mut reader = quick_xml::Reader::from_str(&text);
            reader.config_mut().check_end_names = true;
            loop {
                match reader.read_event() {
                    Ok(quick_xml::events::Event::Eof) => break,
                    Ok(_) => {}
                    Err(e) => panic!("{name} is not well-formed: {e}\n{text}"),
                }
            }
        }
    }

    #[test]
    fn markdown_blocks() {
        let md = "# Title #\n\nline one\nline two\n\n1. first\n2. second\n\nbetween\n\n1. again\n   - nested\n\n> quoted\n\n```\ncode  kept\n```\n\n---\n| h1 | h2 |\n| :-- | --: |\n| a \\| b | c |\nafter";
        let blocks = parse(md);
        assert_eq!(
            blocks,
            vec![
                Block::Heading(1, "Title".into()),
                Block::Paragraph(vec!["line one".into(), "line two".into()]),
                Block::Item {
                    level: 0,
                    list: Some(0),
                    text: "first".into()
                },
                Block::Item {
                    level: 0,
                    list: Some(0),
                    text: "second".into()
                },
                Block::Paragraph(vec!["between".into()]),
                Block::Item {
                    level: 0,
                    list: Some(1),
                    text: "again".into()
                },
                Block::Item {
                    level: 1,
                    list: None,
                    text: "nested".into()
                },
                Block::Quote("quoted".into()),
                Block::Code(vec!["code  kept".into()]),
                Block::Rule,
                Block::Table(vec![
                    vec!["h1".into(), "h2".into()],
                    vec!["a | b".into(), "c".into()]
                ]),
                Block::Paragraph(vec!["after".into()]),
            ]
        );
        assert_eq!(heading("#### deep"), Some((3, "deep".into())));
        assert_eq!(heading("#hashtag"), None);
    }

    #[test]
    fn inline_markup() {
        let runs = inline("a **b** *c* `d*e` [site](https://x.y) 2*3 \\*lit\\*");
        let bold: Vec<&str> = runs
            .iter()
            .filter(|r| r.bold)
            .map(|r| r.text.as_str())
            .collect();
        let italic: Vec<&str> = runs
            .iter()
            .filter(|r| r.italic)
            .map(|r| r.text.as_str())
            .collect();
        let code: Vec<&str> = runs
            .iter()
            .filter(|r| r.code)
            .map(|r| r.text.as_str())
            .collect();
        assert_eq!(bold, vec!["b"]);
        assert_eq!(italic, vec!["c"]);
        assert_eq!(code, vec!["d*e"]);
        let all: String = runs.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(all, "a b c d*e site (https://x.y) 2*3 *lit*");
        let unclosed = inline("**not closed");
        assert_eq!(unclosed.len(), 1);
        assert_eq!(unclosed[0].text, "**not closed");
    }

    #[test]
    fn package_is_well_formed_and_escapes_everything() {
        let md = "# <w:p>&\"x\"\n\nbad\u{1}char **bold** and\ttab\n\n1. one\n\n- b\n\n| a |\n|---|\n| 1 |";
        let bytes = render(&Value::String(md.into())).unwrap();
        assert_well_formed(&bytes);
        let names: Vec<String> = parts(&bytes).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names[0], "[Content_Types].xml");
        for needed in [
            "_rels/.rels",
            "word/document.xml",
            "word/styles.xml",
            "word/numbering.xml",
            "word/_rels/document.xml.rels",
        ] {
            assert!(names.iter().any(|n| n == needed), "{needed}");
        }
        let document = &parts(&bytes)[2].1;
        assert!(document.contains("&lt;w:p&gt;&amp;&quot;x&quot;"));
        assert!(document.contains("badchar"));
        assert!(document.contains("<w:tab/>"));
        assert!(document.contains(r#"<w:numId w:val="2"/>"#));
        assert!(document.contains(r#"<w:numId w:val="1"/>"#));
        assert!(document.ends_with("</w:sectPr></w:body></w:document>"));
        assert!(document.contains("</w:tbl><w:p/><w:sectPr>"));
        let numbering = &parts(&bytes)[5].1;
        assert!(numbering.contains(r#"<w:num w:numId="2">"#));
        assert_well_formed(&render(&Value::String(String::new())).unwrap());
    }
}
