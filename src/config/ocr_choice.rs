//! The `--ocr` setting: which engine reads images and scanned pages. A setting, so it lives
//! with the settings; the engines themselves are in [`crate::ocr`].

use std::fmt;
use std::str::FromStr;

/// The `--ocr` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum OcrChoice {
    /// tesseract if installed, else glm-ocr if an API key is set
    #[default]
    Auto,
    /// The local tesseract program (chi_sim+eng)
    Tesseract,
    /// Zhipu's layout-parsing API
    GlmOcr,
    /// Zhipu's files API (purpose=file-extract)
    FileExtract,
    /// A vision chat model (glm-4v-flash)
    Vision,
    /// No OCR: images fail, scanned PDF pages stay empty
    Off,
}

impl OcrChoice {
    pub const ALL: [OcrChoice; 6] = [
        OcrChoice::Auto,
        OcrChoice::Tesseract,
        OcrChoice::GlmOcr,
        OcrChoice::FileExtract,
        OcrChoice::Vision,
        OcrChoice::Off,
    ];

    /// The name on the command line.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl fmt::Display for OcrChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OcrChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        OcrChoice::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown OCR engine {s:?}; choose one of: {}",
                    OcrChoice::ALL.map(OcrChoice::as_str).join(", ")
                )
            })
    }
}
