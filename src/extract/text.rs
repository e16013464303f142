//! Text files in whatever encoding people saved them: UTF-8 (with or without BOM), UTF-16 (with
//! a BOM, or plainly recognisable without one), and legacy encodings detected by chardetng
//! (GBK/GB18030, Big5, Shift_JIS, EUC-KR, windows-125x, …), all decoded to UTF-8.
//!
//! A file that is really binary (NUL bytes, or mostly control characters once decoded) is
//! refused as `unsupported_type` rather than handed to the model as noise.

use super::{DocKind, ExtractOptions, Extracted, Method, assemble};
use crate::error::{ErrorKind, JobError};
use encoding_rs::{Encoding, UTF_16BE, UTF_16LE};
use std::io::Read;
use std::path::Path;

/// How much of a file decides "binary" and feeds the encoding detector.
const SAMPLE: usize = 1 << 20;

pub(super) fn extract(path: &Path, opts: &ExtractOptions) -> Result<Extracted, JobError> {
    let bytes = read_capped(path, opts.max_input_bytes)?;
    let (text, encoding) = decode(&bytes)?;
    let text = normalise(&text);
    if text.trim().is_empty() {
        return Err(JobError::new(
            ErrorKind::ExtractFailed,
            msg!("no text: the file holds only whitespace"),
        ));
    }
    let (text, pages) = assemble(vec![(1, Method::Text, text)]);
    Ok(Extracted {
        text,
        kind: DocKind::Text,
        pages,
        encoding: Some(encoding),
        ocr_engine: None,
        fallbacks: Vec::new(),
        warnings: Vec::new(),
    })
}

/// Read at most `max` bytes; a longer file is `too_large` (it may have grown since it was
/// stat'ed, so this is checked again here).
pub(super) fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, JobError> {
    let file = std::fs::File::open(path)
        .map_err(|e| JobError::new(ErrorKind::InputError, msg!("cannot open the file: {e}")))?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| JobError::new(ErrorKind::InputError, msg!("cannot read the file: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(super::too_large(bytes.len() as u64, max));
    }
    Ok(bytes)
}

/// Decode `bytes` to UTF-8 and name the encoding found.
pub(crate) fn decode(bytes: &[u8]) -> Result<(String, String), JobError> {
    if let Some((encoding, bom_len)) = Encoding::for_bom(bytes) {
        let (text, _) = encoding.decode_without_bom_handling(&bytes[bom_len..]);
        let name = format!("{} (BOM)", encoding.name());
        return check_not_binary(text.into_owned(), name);
    }
    let sample = &bytes[..bytes.len().min(SAMPLE)];
    if let Some(encoding) = utf16_without_bom(sample) {
        let (text, had_errors) = encoding.decode_without_bom_handling(bytes);
        if !had_errors {
            return check_not_binary(text.into_owned(), encoding.name().to_string());
        }
    }
    let nuls = sample.iter().filter(|&&b| b == 0).count();
    if nuls >= 16 || nuls * 100 >= sample.len() {
        return Err(binary(&msg!("it contains NUL bytes")));
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return check_not_binary(text.to_string(), "UTF-8".to_string());
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(sample, sample.len() == bytes.len());
    let encoding = detector.guess(None, chardetng::Utf8Detection::Allow);
    let (text, _) = encoding.decode_without_bom_handling(bytes);
    check_not_binary(text.into_owned(), encoding.name().to_string())
}

/// UTF-16 text saved without a BOM: ASCII-range characters leave every other byte zero.
fn utf16_without_bom(sample: &[u8]) -> Option<&'static Encoding> {
    let pairs = sample.len() / 2;
    if pairs < 8 {
        return None;
    }
    let (mut even_zero, mut odd_zero) = (0usize, 0usize);
    for pair in sample.chunks_exact(2) {
        even_zero += usize::from(pair[0] == 0);
        odd_zero += usize::from(pair[1] == 0);
    }
    if odd_zero * 10 >= pairs * 4 && even_zero * 20 < pairs {
        Some(UTF_16LE)
    } else if even_zero * 10 >= pairs * 4 && odd_zero * 20 < pairs {
        Some(UTF_16BE)
    } else {
        None
    }
}

/// Decoded text that is mostly control characters or undecodable bytes was never text.
fn check_not_binary(text: String, encoding: String) -> Result<(String, String), JobError> {
    let mut total = 0usize;
    let mut bad = 0usize;
    for c in text.chars().take(SAMPLE) {
        total += 1;
        let control = c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{0C}' | '\u{1B}');
        bad += usize::from(control || c == '\u{FFFD}');
    }
    if total > 0 && bad * 20 > total {
        return Err(binary(&msg!(
            "{}% of it is control characters or undecodable bytes as {encoding}",
            bad * 100 / total
        )));
    }
    Ok((text, encoding))
}

fn binary(why: &str) -> JobError {
    JobError::new(ErrorKind::UnsupportedType, msg!("binary file: {why}"))
}

/// Line ends to `\n`; NULs and other C0 controls except tab, newline and form feed dropped.
fn normalise(text: &str) -> String {
    text.replace("\r\n", "\n")
        .chars()
        .filter(|&c| !c.is_control() || matches!(c, '\n' | '\t' | '\u{0C}'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZH: &str = "中华人民共和国的首都是北京。我们在这里学习中文，阅读文件，并且写总结报告。\
                      这个程序会自动检测文件的编码方式，然后把内容转换成统一的格式。";
    const ZH_TW: &str = "晉太元中，武陵人捕魚為業。緣溪行，忘路之遠近。忽逢桃花林，夾岸數百步，\
                         中無雜樹，芳草鮮美，落英繽紛。漁人甚異之，復前行，欲窮其林。";

    fn encode(encoding: &'static Encoding, s: &str) -> Vec<u8> {
        let (bytes, _, unmappable) = encoding.encode(s);
        assert!(!unmappable, "test text must fit {}", encoding.name());
        bytes.into_owned()
    }

    #[test]
    fn utf8_plain_and_with_bom() {
        let (t, e) = decode("héllo 世界".as_bytes()).unwrap();
        assert_eq!((t.as_str(), e.as_str()), ("héllo 世界", "UTF-8"));
        let (t, e) = decode(b"\xEF\xBB\xBFabc").unwrap();
        assert_eq!((t.as_str(), e.as_str()), ("abc", "UTF-8 (BOM)"));
    }

    #[test]
    fn utf16_with_and_without_bom() {
        let mut le = vec![0xFF, 0xFE];
        le.extend("Hello 世界".encode_utf16().flat_map(u16::to_le_bytes));
        let (t, e) = decode(&le).unwrap();
        assert_eq!((t.as_str(), e.as_str()), ("Hello 世界", "UTF-16LE (BOM)"));

        let mut be = vec![0xFE, 0xFF];
        be.extend("Hello 世界".encode_utf16().flat_map(u16::to_be_bytes));
        let (t, e) = decode(&be).unwrap();
        assert_eq!((t.as_str(), e.as_str()), ("Hello 世界", "UTF-16BE (BOM)"));

        let bare: Vec<u8> = "plain ascii text saved as utf-16"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let (t, e) = decode(&bare).unwrap();
        assert_eq!(
            (t.as_str(), e.as_str()),
            ("plain ascii text saved as utf-16", "UTF-16LE")
        );
    }

    #[test]
    fn legacy_chinese_and_japanese_encodings() {
        let (t, e) = decode(&encode(encoding_rs::GBK, ZH)).unwrap();
        assert_eq!((t.as_str(), e.as_str()), (ZH, "GBK"));
        let (t, e) = decode(&encode(encoding_rs::BIG5, ZH_TW)).unwrap();
        assert_eq!((t.as_str(), e.as_str()), (ZH_TW, "Big5"));
        let ja = "日本語のテキストです。このファイルはシフトJISで保存されました。漢字とひらがなとカタカナ。";
        let (t, e) = decode(&encode(encoding_rs::SHIFT_JIS, ja)).unwrap();
        assert_eq!((t.as_str(), e.as_str()), (ja, "Shift_JIS"));
    }

    #[test]
    fn binary_is_refused() {
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.extend(std::iter::repeat_n(0u8, 64));
        elf.extend(b"some strings");
        let err = decode(&elf).unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnsupportedType);
        assert!(err.message.starts_with("binary file"), "{}", err.message);

        let noise: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 31 + 1) as u8).collect();
        let err = decode(&noise).unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnsupportedType);
    }

    #[test]
    fn normalise_line_ends_and_controls() {
        assert_eq!(normalise("a\r\nb\u{0}c\u{7}\td"), "a\nbc\td");
    }
}
