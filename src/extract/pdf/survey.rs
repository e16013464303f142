//! What a PDF page shows, read from its content stream without extracting any text: how many
//! glyphs its text operators draw, how many images it paints, and whether one upright image
//! covers the whole page (a scan).
//!
//! The glyph count is what catches silent loss: an extractor that returns 39 characters of a
//! page that draws 2,000 glyphs lost the page, however plausible 39 characters look. Counting
//! is by character codes: one byte a glyph for simple fonts, two for composite (Type0) fonts
//! with Identity or UCS-2/UTF-16 encodings, and one or two (by the lead byte) for the other
//! predefined CJK encodings. Spaces in simple fonts are not counted, as extracted whitespace is
//! not either. Text in form XObjects counts each time the form is drawn, as extractors read it.
//!
//! Runs inside the PDF worker (`worker.rs`), under its limits and `catch_unwind`.

use lopdf::{Dictionary, Document, Object, ObjectId};
use serde::{Deserialize, Serialize};

/// Most content operations read for one page, forms included: a page that draws a form a
/// million times is counted up to here.
const MAX_OPERATIONS: usize = 2_000_000;
/// Forms inside forms, at most.
const MAX_FORM_DEPTH: usize = 12;
/// An image covering this share of the page is the page (a scan).
const WHOLE_PAGE: f64 = 0.85;

/// The one image a scanned page consists of, as stored in the file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(super) struct PageImage {
    /// Pixels.
    pub width: u32,
    pub height: u32,
    /// Its resolution on the page, horizontally (pixels per inch).
    pub ppi: u32,
}

/// What the page shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Shown {
    /// Glyphs drawn by text operators, spaces of simple fonts left out.
    pub glyphs: u32,
    /// Images painted (XObjects and inline images, each time drawn).
    pub images: u32,
    /// The image that is the whole page, when the page paints exactly one image, upright and
    /// covering it, that can be handed to OCR as it is.
    pub page_image: Option<PageImage>,
}

/// How a font's character codes map to glyphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codes {
    /// One byte a glyph (simple fonts).
    One,
    /// Two bytes a glyph (Identity-H/V, UCS-2, UTF-16).
    Two,
    /// One byte below 0x81, two from there (the EUC-style CJK encodings: GB, Big5, Shift-JIS…).
    Mixed,
}

/// A 2D affine matrix `[a b c d e f]`, as in PDF.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Matrix([f64; 6]);

impl Matrix {
    const IDENTITY: Matrix = Matrix([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);

    /// `self` applied first, then `then`.
    fn then(self, then: Matrix) -> Matrix {
        let [a, b, c, d, e, f] = self.0;
        let [a2, b2, c2, d2, e2, f2] = then.0;
        Matrix([
            a * a2 + b * c2,
            a * b2 + b * d2,
            c * a2 + d * c2,
            c * b2 + d * d2,
            e * a2 + f * c2 + e2,
            e * b2 + f * d2 + f2,
        ])
    }

    fn apply(self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.0;
        (a * x + c * y + e, b * x + d * y + f)
    }

    fn from_operands(operands: &[Object]) -> Option<Matrix> {
        let n: Vec<f64> = operands.iter().filter_map(number).collect();
        <[f64; 6]>::try_from(n.as_slice()).ok().map(Matrix)
    }

    /// No rotation or shear, no mirroring.
    fn upright(self) -> bool {
        let [a, b, c, d, _, _] = self.0;
        let scale = a.abs().max(d.abs());
        a > 0.0 && d > 0.0 && b.abs() <= scale * 1e-3 && c.abs() <= scale * 1e-3
    }
}

fn number(o: &Object) -> Option<f64> {
    match o {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
}

/// A dictionary entry, following references (a few).
pub(super) fn resolve<'a>(doc: &'a Document, mut obj: &'a Object) -> Option<&'a Object> {
    for _ in 0..8 {
        match obj {
            Object::Reference(id) => obj = doc.get_object(*id).ok()?,
            other => return Some(other),
        }
    }
    None
}

fn dict_entry<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Object> {
    dict.get(key).ok().and_then(|o| resolve(doc, o))
}

/// An inheritable page attribute (`Resources`, `MediaBox`, `Rotate`), looked up the page tree.
pub(super) fn inherited<'a>(
    doc: &'a Document,
    page_id: ObjectId,
    key: &[u8],
) -> Option<&'a Object> {
    let mut dict = doc.get_dictionary(page_id).ok()?;
    for _ in 0..32 {
        if let Ok(value) = dict.get(key) {
            return resolve(doc, value);
        }
        let parent = dict.get(b"Parent").ok()?.as_reference().ok()?;
        dict = doc.get_dictionary(parent).ok()?;
    }
    None
}

/// The page's MediaBox as `(x0, y0, x1, y1)`, normalised.
pub(super) fn media_box(doc: &Document, page_id: ObjectId) -> Option<(f64, f64, f64, f64)> {
    let values = inherited(doc, page_id, b"MediaBox")?.as_array().ok()?;
    let n: Vec<f64> = values
        .iter()
        .filter_map(|v| resolve(doc, v).and_then(number))
        .collect();
    match n.as_slice() {
        [x0, y0, x1, y1] => Some((x0.min(*x1), y0.min(*y1), x0.max(*x1), y0.max(*y1))),
        _ => None,
    }
}

/// Survey one page. Errors name what could not be read (a broken content stream).
pub(super) fn survey(doc: &Document, page_id: ObjectId) -> Result<Shown, String> {
    let content = doc
        .get_page_content(page_id)
        .map_err(|e| format!("cannot read the content stream: {e}"))?;
    let resources = match inherited(doc, page_id, b"Resources") {
        Some(Object::Dictionary(d)) => Some(d),
        _ => None,
    };
    let mut walk = Walk {
        doc,
        operations: 0,
        shown: Shown::default(),
        candidate: None,
        buffer: Vec::new(),
    };
    walk.content(&content, resources, Matrix::IDENTITY, 0)?;
    let mut shown = walk.shown;
    if shown.images == 1
        && let Some((image, placed)) = walk.candidate
        && let Some(page) = media_box(doc, page_id)
        && rotation(doc, page_id) == 0
    {
        shown.page_image = whole_page(image, placed, page);
    }
    Ok(shown)
}

/// The page's `/Rotate`, in degrees 0–359.
fn rotation(doc: &Document, page_id: ObjectId) -> i64 {
    inherited(doc, page_id, b"Rotate")
        .and_then(|o| o.as_i64().ok())
        .map_or(0, |r| r.rem_euclid(360))
}

/// `image` (width, height) placed by `placed` (the unit square's matrix) is the page when it is
/// upright and covers most of it.
fn whole_page(image: (u32, u32), placed: Matrix, page: (f64, f64, f64, f64)) -> Option<PageImage> {
    if !placed.upright() {
        return None;
    }
    let (x0, y0) = placed.apply(0.0, 0.0);
    let (x1, y1) = placed.apply(1.0, 1.0);
    let (px0, py0, px1, py1) = page;
    let page_area = (px1 - px0) * (py1 - py0);
    let w = (x1.min(px1) - x0.max(px0)).max(0.0);
    let h = (y1.min(py1) - y0.max(py0)).max(0.0);
    if page_area <= 0.0 || w * h < WHOLE_PAGE * page_area {
        return None;
    }
    let inches = (x1 - x0) / 72.0;
    let ppi = (f64::from(image.0) / inches).round();
    (ppi.is_finite() && ppi >= 1.0).then_some(PageImage {
        width: image.0,
        height: image.1,
        ppi: ppi.min(f64::from(u32::MAX)) as u32,
    })
}

struct Walk<'a> {
    doc: &'a Document,
    operations: usize,
    shown: Shown,
    /// The last image XObject drawn that OCR could take as it is, and where it was placed.
    candidate: Option<((u32, u32), Matrix)>,
    /// Decoded string bytes, reused.
    buffer: Vec<u8>,
}

impl<'a> Walk<'a> {
    fn content(
        &mut self,
        bytes: &[u8],
        resources: Option<&'a Dictionary>,
        base: Matrix,
        depth: usize,
    ) -> Result<(), String> {
        let mut ctm = base;
        let mut codes = Codes::One;
        let mut saved: Vec<(Matrix, Codes)> = Vec::new();
        let mut operands: Vec<Token> = Vec::new();
        let mut lexer = Lexer { bytes, pos: 0 };
        while let Some(token) = lexer.next() {
            let Token::Operator(start, end) = token else {
                if operands.len() >= 64 {
                    operands.remove(0);
                }
                operands.push(token);
                continue;
            };
            self.operations += 1;
            if self.operations > MAX_OPERATIONS {
                return Ok(());
            }
            match &bytes[start..end] {
                b"q" => saved.push((ctm, codes)),
                b"Q" => {
                    if let Some((m, c)) = saved.pop() {
                        ctm = m;
                        codes = c;
                    }
                }
                b"cm" => {
                    let numbers: Vec<f64> = operands
                        .iter()
                        .filter_map(|t| match t {
                            Token::Number(n) => Some(*n),
                            _ => None,
                        })
                        .collect();
                    if let Some(six) = numbers.len().checked_sub(6).map(|i| &numbers[i..])
                        && let Ok(m) = <[f64; 6]>::try_from(six)
                    {
                        ctm = Matrix(m).then(ctm);
                    }
                }
                b"Tf" => {
                    codes = last_name(&operands, bytes)
                        .and_then(|name| self.font(resources, name))
                        .map_or(Codes::One, |font| font_codes(self.doc, font));
                }
                b"Tj" | b"'" | b"\"" => {
                    if let Some(Token::String(s, e, hex)) = operands
                        .iter()
                        .rev()
                        .find(|t| matches!(t, Token::String(..)))
                    {
                        self.text(&bytes[*s..*e], *hex, codes);
                    }
                }
                b"TJ" => {
                    if let Some(Token::Array(s, e)) = operands
                        .iter()
                        .rev()
                        .find(|t| matches!(t, Token::Array(..)))
                    {
                        let mut inner = Lexer {
                            bytes: &bytes[..*e],
                            pos: *s,
                        };
                        while let Some(t) = inner.next() {
                            if let Token::String(s, e, hex) = t {
                                self.text(&bytes[s..e], hex, codes);
                            }
                        }
                    }
                }
                b"BI" => {
                    self.shown.images += 1;
                    lexer.skip_inline_image();
                }
                b"Do" => {
                    if let Some(name) = last_name(&operands, bytes) {
                        self.draw(resources, name, ctm, depth)?;
                    }
                }
                _ => {}
            }
            operands.clear();
        }
        Ok(())
    }

    /// Count the glyphs of a string operand (`raw`: between its delimiters, undecoded).
    fn text(&mut self, raw: &[u8], hex: bool, codes: Codes) {
        let mut bytes = std::mem::take(&mut self.buffer);
        bytes.clear();
        if hex {
            decode_hex(raw, &mut bytes);
        } else {
            decode_literal(raw, &mut bytes);
        }
        let glyphs = match codes {
            Codes::One => bytes.iter().filter(|&&b| b != b' ').count(),
            Codes::Two => bytes.len() / 2,
            Codes::Mixed => {
                let (mut n, mut i) = (0, 0);
                while i < bytes.len() {
                    if bytes[i] >= 0x81 {
                        i += 2;
                        n += 1;
                    } else {
                        if bytes[i] != b' ' {
                            n += 1;
                        }
                        i += 1;
                    }
                }
                n
            }
        };
        self.buffer = bytes;
        self.shown.glyphs = self
            .shown
            .glyphs
            .saturating_add(u32::try_from(glyphs).unwrap_or(u32::MAX));
    }

    fn font(&self, resources: Option<&'a Dictionary>, name: &[u8]) -> Option<&'a Dictionary> {
        let fonts = dict_entry(self.doc, resources?, b"Font")?.as_dict().ok()?;
        dict_entry(self.doc, fonts, name)?.as_dict().ok()
    }

    /// `Do`: an image is counted (and remembered when OCR could take it as it is); a form's
    /// content is walked with its own resources and matrix.
    fn draw(
        &mut self,
        resources: Option<&'a Dictionary>,
        name: &[u8],
        ctm: Matrix,
        depth: usize,
    ) -> Result<(), String> {
        let Some(xobjects) = resources
            .and_then(|r| dict_entry(self.doc, r, b"XObject"))
            .and_then(|o| o.as_dict().ok())
        else {
            return Ok(());
        };
        let Some(Object::Stream(stream)) = dict_entry(self.doc, xobjects, name) else {
            return Ok(());
        };
        match stream.dict.get(b"Subtype").and_then(|s| s.as_name()) {
            Ok(b"Image") => {
                self.shown.images += 1;
                self.candidate = plain_image(self.doc, &stream.dict).map(|size| (size, ctm));
            }
            Ok(b"Form") if depth < MAX_FORM_DEPTH => {
                let inner = match dict_entry(self.doc, &stream.dict, b"Resources") {
                    Some(Object::Dictionary(d)) => Some(d),
                    _ => resources,
                };
                let matrix = stream
                    .dict
                    .get(b"Matrix")
                    .ok()
                    .and_then(|m| m.as_array().ok())
                    .and_then(|m| Matrix::from_operands(m))
                    .unwrap_or(Matrix::IDENTITY);
                let bytes = if stream.dict.has(b"Filter") {
                    stream
                        .decompressed_content()
                        .map_err(|e| format!("cannot read a form's content: {e}"))?
                } else {
                    stream.content.clone()
                };
                self.content(&bytes, inner, matrix.then(ctm), depth + 1)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// One token of a content stream; positions are byte offsets into it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Number(f64),
    /// A name without its slash.
    Name(usize, usize),
    /// A string's bytes between its delimiters, undecoded; true for a hex string.
    String(usize, usize, bool),
    /// An array, brackets excluded.
    Array(usize, usize),
    /// A dictionary, `true`, `false`, `null` or something unreadable: skipped.
    Other,
    Operator(usize, usize),
}

fn last_name<'b>(operands: &[Token], bytes: &'b [u8]) -> Option<&'b [u8]> {
    operands.iter().rev().find_map(|t| match t {
        Token::Name(s, e) => Some(&bytes[*s..*e]),
        _ => None,
    })
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\0' | b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

fn is_delimiter(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

/// A content-stream tokenizer that allocates nothing: the survey reads every page of a
/// document beside pdftotext, so it has to be cheaper than pdftotext is.
struct Lexer<'b> {
    bytes: &'b [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b) = self.peek() {
            if is_space(b) {
                self.pos += 1;
            } else if b == b'%' {
                while self.peek().is_some_and(|b| b != b'\n' && b != b'\r') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn regular(&mut self) -> (usize, usize) {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| !is_space(b) && !is_delimiter(b))
        {
            self.pos += 1;
        }
        (start, self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        self.skip_space();
        let b = self.peek()?;
        let start = self.pos;
        Some(match b {
            b'/' => {
                self.pos += 1;
                let (s, e) = self.regular();
                Token::Name(s, e)
            }
            b'(' => {
                self.pos += 1;
                let mut depth = 1;
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    match c {
                        b'\\' => self.pos += 1,
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let end = self.pos.min(self.bytes.len());
                Token::String(start + 1, end.saturating_sub(1).max(start + 1), false)
            }
            b'<' if self.bytes.get(self.pos + 1) == Some(&b'<') => {
                self.pos += 2;
                self.until(b'>');
                Token::Other
            }
            b'<' => {
                self.pos += 1;
                while self.peek().is_some_and(|c| c != b'>') {
                    self.pos += 1;
                }
                let end = self.pos;
                self.pos = (self.pos + 1).min(self.bytes.len());
                Token::String(start + 1, end, true)
            }
            b'[' => {
                self.pos += 1;
                let end = self.until(b']');
                Token::Array(start + 1, end)
            }
            b'{' => {
                self.pos += 1;
                self.until(b'}');
                Token::Other
            }
            b']' | b'>' | b'}' | b')' => {
                self.pos += 1;
                Token::Other
            }
            b'+' | b'-' | b'.' | b'0'..=b'9' => {
                let (s, e) = self.regular();
                std::str::from_utf8(&self.bytes[s..e])
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .map_or(Token::Other, Token::Number)
            }
            _ => {
                let (s, e) = self.regular();
                if e == s {
                    self.pos += 1;
                    return Some(Token::Other);
                }
                match &self.bytes[s..e] {
                    b"true" | b"false" | b"null" => Token::Other,
                    _ => Token::Operator(s, e),
                }
            }
        })
    }

    /// Skip tokens up to the closing `close` (`]`, `>` of `>>`, `}`) of a structure already
    /// opened; returns where the closing delimiter starts.
    fn until(&mut self, close: u8) -> usize {
        loop {
            self.skip_space();
            match self.peek() {
                None => return self.pos,
                Some(b) if b == close => {
                    let end = self.pos;
                    self.pos += 1;
                    if close == b'>' && self.peek() == Some(b'>') {
                        self.pos += 1;
                    }
                    return end;
                }
                Some(_) => {
                    if self.next().is_none() {
                        return self.pos;
                    }
                }
            }
        }
    }

    /// After `BI`: skip the image's dictionary, `ID`, and its data up to `EI`.
    fn skip_inline_image(&mut self) {
        while let Some(token) = self.next() {
            if let Token::Operator(s, e) = token
                && &self.bytes[s..e] == b"ID"
            {
                break;
            }
        }
        // The data: binary, ended by whitespace, `EI`, and whitespace or the end.
        let data = self.pos + 1;
        let found = self.bytes.get(data..).and_then(|rest| {
            rest.windows(4)
                .position(|w| is_space(w[0]) && w[1] == b'E' && w[2] == b'I' && is_space(w[3]))
                .map(|i| data + i + 3)
                .or_else(|| rest.ends_with(b"EI").then_some(self.bytes.len()))
        });
        self.pos = found.unwrap_or(self.bytes.len());
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn decode_hex(raw: &[u8], out: &mut Vec<u8>) {
    let mut high = None;
    for v in raw.iter().filter_map(|&b| hex_value(b)) {
        match high.take() {
            None => high = Some(v),
            Some(h) => out.push(h << 4 | v),
        }
    }
    if let Some(h) = high {
        out.push(h << 4);
    }
}

fn decode_literal(raw: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(&c) = raw.get(i) else { break };
        i += 1;
        match c {
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push((v & 0xFF) as u8);
            }
            // A backslash at the end of a line continues the string on the next.
            b'\r' => {
                if raw.get(i) == Some(&b'\n') {
                    i += 1;
                }
            }
            b'\n' => {}
            other => out.push(other),
        }
    }
}

/// An image's pixel size, when OCR can take the stored image as it is: not a stencil mask, no
/// decode array that inverts it.
fn plain_image(doc: &Document, dict: &Dictionary) -> Option<(u32, u32)> {
    let flag = |key: &[u8]| {
        dict_entry(doc, dict, key)
            .and_then(|o| o.as_bool().ok())
            .unwrap_or(false)
    };
    // The default decode array ([0 1] for each component) is the only one that cannot invert.
    let inverting = dict_entry(doc, dict, b"Decode")
        .and_then(|o| o.as_array().ok())
        .is_some_and(|values| {
            values.iter().enumerate().any(|(i, v)| {
                let want = if i % 2 == 0 { 0.0 } else { 1.0 };
                resolve(doc, v).and_then(number) != Some(want)
            })
        });
    if flag(b"ImageMask") || inverting {
        return None;
    }
    let size = |key: &[u8]| {
        dict_entry(doc, dict, key)
            .and_then(|o| o.as_i64().ok())
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n > 0)
    };
    Some((size(b"Width")?, size(b"Height")?))
}

fn font_codes(doc: &Document, font: &Dictionary) -> Codes {
    if font.get(b"Subtype").and_then(|s| s.as_name()).ok() != Some(b"Type0") {
        return Codes::One;
    }
    match dict_entry(doc, font, b"Encoding") {
        Some(Object::Name(name)) => encoding_codes(name),
        // An embedded CMap: almost always two bytes (Identity-like) in real files.
        _ => Codes::Two,
    }
}

fn encoding_codes(name: &[u8]) -> Codes {
    let name = String::from_utf8_lossy(name);
    if name.starts_with("Identity") || name.contains("UCS2") || name.contains("UTF16") {
        Codes::Two
    } else {
        Codes::Mixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{Stream, dictionary};

    /// A one-page document whose content is `content`, with a simple font F1, a Type0 font F2
    /// (Identity-H) and a 2550×3300 image Im1.
    fn doc(content: &str) -> (Document, ObjectId) {
        let mut doc = Document::with_version("1.5");
        let f1 = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        let f2 = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type0", "BaseFont" => "Song",
            "Encoding" => "Identity-H",
        });
        let image = doc.add_object(Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Image", "Width" => 2550, "Height" => 3300,
                "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8,
            },
            vec![0; 16],
        ));
        let form = doc.add_object(Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Form", "BBox" => vec![0.into(), 0.into(), 100.into(), 100.into()],
                "Resources" => dictionary! { "Font" => dictionary! { "F1" => f1 } },
            },
            b"BT /F1 10 Tf (form) Tj ET".to_vec(),
        ));
        let resources = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => f1, "F2" => f2 },
            "XObject" => dictionary! { "Im1" => image, "Fm1" => form },
        });
        let contents = doc.add_object(Stream::new(dictionary! {}, content.as_bytes().to_vec()));
        let pages_id = doc.new_object_id();
        let page = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => contents,
            "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1,
            }),
        );
        (doc, page)
    }

    #[test]
    fn glyphs_are_counted_by_the_fonts_codes() {
        let (d, page) = doc("BT /F1 12 Tf (Hello world) Tj [(A) -20 (B)] TJ ET \
             BT /F2 12 Tf <4E2D6587> Tj ET q /Fm1 Do Q /Fm1 Do");
        let shown = survey(&d, page).unwrap();
        // 10 + 2 (simple font, space left out) + 2 (two 2-byte codes) + 4 + 4 (the form twice).
        assert_eq!(shown.glyphs, 22);
        assert_eq!(shown.images, 0);
        assert_eq!(shown.page_image, None);
    }

    #[test]
    fn a_scan_is_one_upright_image_covering_the_page() {
        let (d, page) = doc("q 612 0 0 792 0 0 cm /Im1 Do Q");
        let shown = survey(&d, page).unwrap();
        assert_eq!(shown.images, 1);
        assert_eq!(
            shown.page_image,
            Some(PageImage {
                width: 2550,
                height: 3300,
                ppi: 300
            })
        );
        // A small picture on a page is not the page.
        let (d, page) = doc("q 200 0 0 100 50 50 cm /Im1 Do Q");
        assert_eq!(survey(&d, page).unwrap().page_image, None);
        // Rotated, it is not handed over as it is either.
        let (d, page) = doc("q 0 792 -612 0 612 0 cm /Im1 Do Q");
        assert_eq!(survey(&d, page).unwrap().page_image, None);
        // Two images: not one scan.
        let (d, page) = doc("q 612 0 0 792 0 0 cm /Im1 Do Q q 10 0 0 10 0 0 cm /Im1 Do Q");
        let shown = survey(&d, page).unwrap();
        assert_eq!((shown.images, shown.page_image), (2, None));
    }

    #[test]
    fn strings_are_decoded_before_counting() {
        let (d, page) = doc(
            "BT /F1 12 Tf (a\\(b\\)c\\101\\\n d) Tj (nested (parens) here) Tj <414 2> Tj ET \
             BI /W 4 /H 4 /BPC 8 /CS /G ID \x00EI\x01\x02(Tj)Tj EI \
             BT /F2 12 Tf [<4E2D> -200 <6587> (x)] TJ ET",
        );
        let shown = survey(&d, page).unwrap();
        // a(b)cAd = 7; nested(parens)here = 18; AB = 2; then 2 + 2 + 0 (one byte, two-byte
        // font); the inline image's data is not text.
        assert_eq!(shown.glyphs, 7 + 18 + 2 + 2);
        assert_eq!(shown.images, 1);
    }

    #[test]
    fn cjk_encodings() {
        assert_eq!(encoding_codes(b"Identity-H"), Codes::Two);
        assert_eq!(encoding_codes(b"UniGB-UCS2-H"), Codes::Two);
        assert_eq!(encoding_codes(b"GBK-EUC-H"), Codes::Mixed);
    }
}
