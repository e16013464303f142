//! Documents made here for the integration tests: small valid ones (a PDF with a line of text,
//! a docx) and hostile ones (cut, byte-flipped, self-referencing, decompression bombs), built
//! on the PDF and zip writers of `extract_docs.rs`.

#![allow(dead_code)]

use crate::extract_docs::{BOX, one_page_pdf, pdf, stream, text_content, zeros_zlib, zip_file};
use std::path::Path;

/// A valid one-page PDF whose text layer is `text` (printable ASCII, no parentheses).
pub fn text_pdf(text: &str) -> Vec<u8> {
    one_page_pdf(BOX, "", &text_content(text), &[])
}

/// A valid one-page PDF with a line of ordinary text.
pub fn hello_pdf() -> Vec<u8> {
    text_pdf(crate::extract_docs::HELLO)
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
        crate::extract_docs::W
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
