//! Word, PowerPoint and spreadsheet files as text.
//!
//! docx and pptx are zip archives of XML, read with quick-xml: paragraphs as lines, headings
//! and list items marked the way markdown would, tables as rows of cells joined by ` | `,
//! slides in presentation order, each under a `--- slide N ---` marker. Spreadsheets (xlsx,
//! xlsm, xlsb, xls, ods) go through calamine, each sheet a `## Sheet: name` heading over
//! CSV rows.
//!
//! Office files are untrusted: entries are read with a size cap (zip bombs), parsers run under
//! `catch_unwind` (a panic in a parser is this document's `extract_failed`, not the run's end).

use super::{DocKind, Extracted, Method, assemble, tidy};
use crate::error::{ErrorKind, JobError};
use calamine::{Data, Reader};
use quick_xml::events::Event;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

/// The largest XML part read from a docx/pptx (decompressed).
const MAX_PART_BYTES: u64 = 256 << 20;

pub(super) fn extract(path: &Path) -> Result<Extracted, JobError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let result = catch_unwind(AssertUnwindSafe(|| match ext.as_str() {
        "docx" => docx(path),
        "pptx" => pptx(path),
        _ => spreadsheet(path),
    }));
    let pages = match result {
        Ok(pages) => pages?,
        Err(panic) => {
            return Err(failed(msg!(
                "the {ext} parser crashed: {}",
                panic_message(panic.as_ref())
            )));
        }
    };
    if pages.iter().all(|(_, _, t)| t.trim().is_empty()) {
        return Err(failed(msg!("no text found in the document")));
    }
    let (text, pages) = assemble(pages);
    Ok(Extracted {
        text,
        kind: DocKind::Office,
        pages,
        encoding: None,
        ocr_engine: None,
        fallbacks: Vec::new(),
        warnings: Vec::new(),
    })
}

fn failed(message: String) -> JobError {
    JobError::new(ErrorKind::ExtractFailed, message)
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

type Archive = zip::ZipArchive<BufReader<File>>;

fn open_zip(path: &Path, what: &str) -> Result<Archive, JobError> {
    let file = File::open(path)
        .map_err(|e| JobError::new(ErrorKind::InputError, msg!("cannot open the file: {e}")))?;
    zip::ZipArchive::new(BufReader::new(file))
        .map_err(|e| failed(msg!("not a readable {what} file (broken zip archive: {e})")))
}

/// One part of the archive as a string, or `None` if the archive has no such part.
fn read_part(zip: &mut Archive, name: &str) -> Result<Option<String>, JobError> {
    let entry = match zip.by_name(name) {
        Ok(entry) => entry,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(failed(msg!("cannot read {name} from the archive: {e}"))),
    };
    let mut bytes = Vec::new();
    entry
        .take(MAX_PART_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| failed(msg!("cannot decompress {name}: {e}")))?;
    if bytes.len() as u64 > MAX_PART_BYTES {
        return Err(failed(msg!(
            "{name} decompresses to more than {} MiB",
            MAX_PART_BYTES >> 20
        )));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| failed(msg!("{name} is not UTF-8 XML")))
}

fn docx(path: &Path) -> Result<Vec<(u32, Method, String)>, JobError> {
    let mut zip = open_zip(path, "docx")?;
    let xml = read_part(&mut zip, "word/document.xml")?
        .ok_or_else(|| failed(msg!("not a Word document: word/document.xml is missing")))?;
    let text = xml_text(&xml).map_err(|e| failed(format!("word/document.xml: {e}")))?;
    Ok(vec![(1, Method::Office, tidy(&text))])
}

fn pptx(path: &Path) -> Result<Vec<(u32, Method, String)>, JobError> {
    let mut zip = open_zip(path, "pptx")?;
    let slides = slide_order(&mut zip)?;
    if slides.is_empty() {
        return Err(failed(msg!("the presentation has no slides")));
    }
    let mut pages = Vec::with_capacity(slides.len());
    for (i, part) in slides.iter().enumerate() {
        let number = i as u32 + 1;
        let xml = read_part(&mut zip, part)?
            .ok_or_else(|| failed(msg!("slide {number} ({part}) is missing")))?;
        let body = xml_text(&xml).map_err(|e| failed(format!("{part}: {e}")))?;
        pages.push((
            number,
            Method::Office,
            tidy(&format!("--- slide {number} ---\n{body}")),
        ));
    }
    Ok(pages)
}

/// The slide parts in presentation order: `p:sldIdLst` in presentation.xml resolved through
/// its relationships; if those are unreadable, `ppt/slides/slideN.xml` by N.
fn slide_order(zip: &mut Archive) -> Result<Vec<String>, JobError> {
    let ordered = (|| -> Option<Vec<String>> {
        let presentation = read_part(zip, "ppt/presentation.xml").ok()??;
        let rels = read_part(zip, "ppt/_rels/presentation.xml.rels").ok()??;
        let targets = relationship_targets(&rels)?;
        let ids = slide_ids(&presentation)?;
        ids.iter()
            .map(|id| targets.get(id).map(|t| resolve_target("ppt", t)))
            .collect()
    })();
    if let Some(ordered) = ordered.filter(|o| !o.is_empty()) {
        return Ok(ordered);
    }
    let mut numbered: Vec<(u32, String)> = zip
        .file_names()
        .filter_map(|name| {
            let name = name.ok()?;
            let n = name
                .strip_prefix("ppt/slides/slide")?
                .strip_suffix(".xml")?
                .parse()
                .ok()?;
            Some((n, name.into_owned()))
        })
        .collect();
    numbered.sort();
    Ok(numbered.into_iter().map(|(_, name)| name).collect())
}

fn relationship_targets(rels: &str) -> Option<HashMap<String, String>> {
    let mut reader = quick_xml::Reader::from_str(rels);
    let mut map = HashMap::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) | Event::Empty(e)
                if e.name().local_name().as_ref() == "Relationship" =>
            {
                let mut id = None;
                let mut target = None;
                for attr in e.attributes().flatten() {
                    let value = attr_value(&attr).ok()?.into_owned();
                    match attr.key.local_name().as_ref() {
                        "Id" => id = Some(value),
                        "Target" => target = Some(value),
                        _ => {}
                    }
                }
                if let (Some(id), Some(target)) = (id, target) {
                    map.insert(id, target);
                }
            }
            Event::Eof => return Some(map),
            _ => {}
        }
    }
}

fn slide_ids(presentation: &str) -> Option<Vec<String>> {
    let mut reader = quick_xml::Reader::from_str(presentation);
    let mut ids = Vec::new();
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) | Event::Empty(e) if e.name().local_name().as_ref() == "sldId" => {
                for attr in e.attributes().flatten() {
                    // The relationship id is `r:id`; the plain `id` is a number.
                    if attr.key.as_ref() == "r:id"
                        || (attr.key.local_name().as_ref() == "id" && attr.key.prefix().is_some())
                    {
                        ids.push(attr_value(&attr).ok()?.into_owned());
                    }
                }
            }
            Event::Eof => return Some(ids),
            _ => {}
        }
    }
}

/// A relationship target relative to `base` (`slides/slide1.xml` → `ppt/slides/slide1.xml`),
/// or absolute within the package (`/ppt/slides/slide1.xml`).
fn resolve_target(base: &str, target: &str) -> String {
    if let Some(abs) = target.strip_prefix('/') {
        return abs.to_string();
    }
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// One table being read: finished rows, the row being read, the cell being read.
#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
}

/// The text of a WordprocessingML or DrawingML part. Both use the same local names: `p`
/// paragraphs, `r` runs, `t` text, `tbl`/`tr`/`tc` tables, `br`/`cr`/`tab` inside runs.
fn xml_text(xml: &str) -> Result<String, quick_xml::Error> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut out = String::new();
    let mut para = String::new();
    let mut prefix = String::new();
    let mut tables: Vec<Table> = Vec::new();
    let mut in_text = false;
    let mut run_depth = 0usize;

    loop {
        match reader.read_event()? {
            Event::Start(e) => match e.name().local_name().as_ref() {
                "t" => in_text = true,
                "r" => run_depth += 1,
                "tbl" => tables.push(Table::default()),
                "tr" => {
                    if let Some(t) = tables.last_mut() {
                        t.row.clear();
                    }
                }
                "tc" => {
                    if let Some(t) = tables.last_mut() {
                        t.cell.clear();
                    }
                }
                _ => {}
            },
            Event::Empty(e) => match e.name().local_name().as_ref() {
                "br" | "cr" if run_depth > 0 => para.push('\n'),
                "br" => para.push('\n'),
                "tab" if run_depth > 0 => para.push('\t'),
                "pStyle" => {
                    for attr in e.attributes().flatten() {
                        if attr.key.local_name().as_ref() == "val" {
                            let style = attr_value(&attr).unwrap_or_default();
                            prefix = heading_prefix(&style);
                        }
                    }
                }
                "numPr" | "ilvl" if prefix.is_empty() => prefix = "- ".to_string(),
                _ => {}
            },
            Event::Text(t) if in_text => para.push_str(&t.xml10_content()),
            Event::CData(t) if in_text => para.push_str(&t),
            Event::GeneralRef(r) if in_text => {
                if let Ok(Some(c)) = r.resolve_char_ref() {
                    para.push(c);
                } else if let Some(s) = quick_xml::escape::resolve_xml_entity(&r) {
                    para.push_str(s);
                }
            }
            Event::End(e) => match e.name().local_name().as_ref() {
                "t" => in_text = false,
                "r" => run_depth = run_depth.saturating_sub(1),
                "p" => {
                    let line = format!("{prefix}{}", para.trim_end());
                    para.clear();
                    prefix.clear();
                    end_paragraph(&line, &mut tables, &mut out);
                }
                "tc" => {
                    if let Some(t) = tables.last_mut() {
                        let cell = std::mem::take(&mut t.cell).replace('\n', " ");
                        t.row.push(cell.trim().to_string());
                    }
                }
                "tr" => {
                    if let Some(t) = tables.last_mut() {
                        let row = std::mem::take(&mut t.row);
                        if row.iter().any(|c| !c.is_empty()) {
                            t.rows.push(row);
                        }
                    }
                }
                "tbl" => end_table(&mut tables, &mut out),
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// A paragraph's line goes into the cell of the table it is in, joined by spaces, or else onto
/// a line of its own.
fn end_paragraph(line: &str, tables: &mut [Table], out: &mut String) {
    match tables.last_mut() {
        Some(t) => {
            let line = line.trim();
            if !line.is_empty() {
                if !t.cell.is_empty() {
                    t.cell.push(' ');
                }
                t.cell.push_str(line);
            }
        }
        None => {
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// A finished table: one line per row, cells joined by ` | `, set apart by blank lines; a
/// table inside a cell joins the cell's text, its rows joined by `; `.
fn end_table(tables: &mut Vec<Table>, out: &mut String) {
    if let Some(t) = tables.pop() {
        let rendered: Vec<String> = t.rows.iter().map(|r| r.join(" | ")).collect();
        match tables.last_mut() {
            // A table inside a cell: its rows join the cell's text.
            Some(outer) => {
                if !outer.cell.is_empty() {
                    outer.cell.push(' ');
                }
                outer.cell.push_str(&rendered.join("; "));
            }
            None => {
                out.push('\n');
                for line in rendered {
                    out.push_str(&line);
                    out.push('\n');
                }
                out.push('\n');
            }
        }
    }
}

fn attr_value<'a>(
    attr: &quick_xml::events::attributes::Attribute<'a>,
) -> quick_xml::Result<std::borrow::Cow<'a, str>> {
    attr.normalized_value(quick_xml::XmlVersion::Implicit1_0)
}

/// `Heading2` → `## `, `Title` → `# `; other styles no prefix.
fn heading_prefix(style: &str) -> String {
    let lower = style.to_ascii_lowercase();
    if lower == "title" {
        return "# ".to_string();
    }
    match lower
        .strip_prefix("heading")
        .and_then(|n| n.trim().parse::<usize>().ok())
    {
        Some(level @ 1..=6) => format!("{} ", "#".repeat(level)),
        _ => String::new(),
    }
}

fn spreadsheet(path: &Path) -> Result<Vec<(u32, Method, String)>, JobError> {
    let mut workbook = calamine::open_workbook_auto(path)
        .map_err(|e| failed(msg!("not a readable spreadsheet: {e}")))?;
    let names = workbook.sheet_names();
    if names.is_empty() {
        return Err(failed(msg!("the workbook has no sheets")));
    }
    let mut pages = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let range = workbook
            .worksheet_range(name)
            .map_err(|e| failed(msg!("sheet {name:?}: {e}")))?;
        let mut csv = csv::WriterBuilder::new()
            .flexible(true)
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        for row in range.rows() {
            let mut cells: Vec<String> = row.iter().map(cell_text).collect();
            while cells.last().is_some_and(|c| c.is_empty()) {
                cells.pop();
            }
            if cells.is_empty() {
                continue;
            }
            csv.write_record(&cells)
                .map_err(|e| failed(msg!("sheet {name:?}: {e}")))?;
        }
        let body = csv
            .into_inner()
            .map_err(|e| failed(msg!("sheet {name:?}: {e}")))?;
        let body = String::from_utf8_lossy(&body);
        let body = if body.trim().is_empty() {
            "(empty)"
        } else {
            body.trim_end()
        };
        pages.push((
            i as u32 + 1,
            Method::Office,
            format!("## Sheet: {name}\n{body}"),
        ));
    }
    Ok(pages)
}

fn cell_text(cell: &Data) -> String {
    match cell {
        Data::DateTime(dt) if dt.is_datetime() => {
            let (y, mo, d, h, mi, s, _) = dt.to_ymd_hms_milli();
            if (h, mi, s) == (0, 0, 0) {
                format!("{y:04}-{mo:02}-{d:02}")
            } else {
                format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
            }
        }
        Data::String(s) => s.trim_end().to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_xml_paragraphs_headings_lists_and_tables() {
        let xml = r#"<w:document xmlns:w="w"><w:body>
            <w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Report &amp; plan</w:t></w:r></w:p>
            <w:p><w:pPr><w:tabs><w:tab w:val="left"/></w:tabs></w:pPr>
                 <w:r><w:t xml:space="preserve">First </w:t></w:r><w:r><w:t>line</w:t><w:tab/><w:t>tabbed</w:t></w:r></w:p>
            <w:p><w:pPr><w:numPr><w:ilvl w:val="0"/></w:numPr></w:pPr><w:r><w:t>item</w:t></w:r></w:p>
            <w:tbl><w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>b</w:t></w:r></w:p><w:p><w:r><w:t>b2</w:t></w:r></w:p></w:tc></w:tr>
                   <w:tr><w:tc><w:p><w:r><w:t>1</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>&#x4E2D;</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
            <w:p><w:r><w:instrText>PAGE</w:instrText><w:t>end</w:t></w:r></w:p>
        </w:body></w:document>"#;
        let text = tidy(&xml_text(xml).unwrap());
        assert_eq!(
            text,
            "# Report & plan\nFirst line\ttabbed\n- item\n\na | b b2\n1 | 中\n\nend"
        );
    }

    #[test]
    fn broken_xml_is_an_error() {
        assert!(xml_text("<w:p><w:t>x</w:p>").is_err());
    }

    #[test]
    fn targets_resolve_within_the_package() {
        assert_eq!(
            resolve_target("ppt", "slides/slide2.xml"),
            "ppt/slides/slide2.xml"
        );
        assert_eq!(
            resolve_target("ppt", "/ppt/slides/s.xml"),
            "ppt/slides/s.xml"
        );
        assert_eq!(resolve_target("ppt", "../x.xml"), "x.xml");
    }

    #[test]
    fn headings() {
        assert_eq!(heading_prefix("Heading3"), "### ");
        assert_eq!(heading_prefix("Title"), "# ");
        assert_eq!(heading_prefix("Normal"), "");
    }
}
