//! Documents made here for the integration tests: small valid ones (a PDF with a line of text,
//! a docx) and hostile ones (cut, byte-flipped, self-referencing, decompression bombs), and the
//! PDF and zip writers they are built with. Shared by both test binaries (`tests/ext` includes
//! this file), so each uses a subset.

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;

/// A valid one-page PDF whose text layer is `text` (printable ASCII, no parentheses).
pub fn text_pdf(text: &str) -> Vec<u8> {
    one_page_pdf(BOX, "", &text_content(text), &[])
}

/// A valid one-page PDF with a line of ordinary text.
pub fn hello_pdf() -> Vec<u8> {
    text_pdf(HELLO)
}

/// The first `share` of `good`: cut before its content, so nothing can be salvaged.
pub fn truncated(good: &[u8], numerator: usize, denominator: usize) -> Vec<u8> {
    good[..good.len() * numerator / denominator].to_vec()
}

/// `good` with every fifth byte after the header flipped.
pub fn byte_flipped(good: &[u8]) -> Vec<u8> {
    let mut bytes = good.to_vec();
    for i in (7..bytes.len()).step_by(5) {
        bytes[i] ^= 0xA5;
    }
    bytes
}

/// One page that draws a form XObject that draws itself (endless recursion in pdf-extract).
pub fn self_referencing_xobject_pdf() -> Vec<u8> {
    one_page_pdf(
        BOX,
        "/XObject << /X0 6 0 R >>",
        b"/X0 Do",
        &[stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X0 6 0 R >> >>",
            b"/X0 Do",
        )],
    )
}

/// A decompression bomb: one page whose `/Contents` lists the same FlateDecode stream of
/// `chunk` zero bytes `copies` times, so reading the page inflates `chunk × copies` bytes from
/// a file of about `chunk / 1000` bytes.
pub fn bomb_pdf(chunk: u64, copies: usize) -> Vec<u8> {
    let refs = vec!["5 0 R"; copies].join(" ");
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R {BOX} /Resources << /Font << /F1 4 0 R >> >> /Contents [{refs}] >>"
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
        stream("/Filter /FlateDecode", &zeros_zlib(chunk)),
    ])
}

/// A minimal Word document with one paragraph per entry of `paragraphs`.
pub fn write_docx(path: &Path, paragraphs: &[&str]) {
    let body: String = paragraphs
        .iter()
        .map(|p| format!("<w:p><w:r><w:t xml:space=\"preserve\">{p}</w:t></w:r></w:p>"))
        .collect();
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document {}><w:body>{body}<w:sectPr/></w:body></w:document>"#,
        W
    );
    zip_file(
        path,
        &[
            (
                "[Content_Types].xml",
                r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#,
            ),
            ("word/document.xml", &document),
        ],
    );
}

/// A PDF from numbered object bodies (object i+1 is `objects[i]`), with a correct xref table.
pub fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend(body);
        out.extend(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

pub fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut body = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    body.extend(data);
    body.extend(b"\nendstream");
    body
}

pub const BOX: &str = "/MediaBox [0 0 612 792]";

pub const HELLO: &str = "Hostile corpus control page: this line has plenty of ordinary text.";

/// A one-page PDF: `page_extra` goes into the page dictionary, `resources` into its resources,
/// `content` is its content stream (object 5), `more` are objects 6, 7, …
pub fn one_page_pdf(
    page_extra: &str,
    resources: &str,
    content: &[u8],
    more: &[Vec<u8>],
) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R {page_extra} /Resources << /Font << /F1 4 0 R >> {resources} >> /Contents 5 0 R >>"
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
        stream("", content),
    ];
    objects.extend(more.iter().cloned());
    pdf(&objects)
}

pub fn text_content(text: &str) -> Vec<u8> {
    format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").into_bytes()
}

pub fn zip_file(path: &Path, parts: &[(&str, &str)]) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, content) in parts {
        zip.start_file(*name, options).unwrap();
        zip.write_all(content.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
}

pub const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

/// A zlib stream of `len` zeros, compressed as it is written (never held in memory whole).
pub fn zeros_zlib(len: u64) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    zip.start_file("zeros", options).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        zip.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    let archive = zip.finish().unwrap().into_inner();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(archive)).unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut archive.by_index_raw(0).unwrap(), &mut raw).unwrap();
    // zlib = header + raw deflate + Adler-32 (of zeros: a = 1, b = len mod 65521).
    let adler = (((len % 65521) as u32) << 16) | 1;
    let mut out = vec![0x78, 0x9C];
    out.extend(raw);
    out.extend(adler.to_be_bytes());
    out
}

/// One readable line, then 1,200 glyphs drawn with codes no extractor can turn into text.
pub fn mostly_unreadable_page() -> Vec<u8> {
    let mut content = text_content(HELLO);
    for i in 0..20 {
        let codes: String = (0..60).map(|j| format!("\\{:03o}", 1 + j % 30)).collect();
        content.extend(format!("\nBT /F1 10 Tf 72 {} Td ({codes}) Tj ET", 680 - 14 * i).bytes());
    }
    one_page_pdf(BOX, "", &content, &[])
}

/// Three pages; the second draws a form XObject that draws itself.
pub fn three_pages_with_a_loop_in_the_middle() -> Vec<u8> {
    let page = |content: u32, resources: &str| {
        format!(
            "<< /Type /Page /Parent 2 0 R {BOX} /Resources << /Font << /F1 3 0 R >> {resources} >> /Contents {content} 0 R >>"
        )
        .into_bytes()
    };
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [4 0 R 6 0 R 8 0 R] /Count 3 >>".to_vec(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
        page(5, ""),
        stream(
            "",
            &text_content("First page: the worker reads this one before it dies."),
        ),
        page(7, "/XObject << /X0 10 0 R >>"),
        stream("", b"/X0 Do"),
        page(9, ""),
        stream(
            "",
            &text_content("Third page: read by the restarted worker after the crash."),
        ),
        stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X0 10 0 R >> >>",
            b"/X0 Do",
        ),
    ])
}
