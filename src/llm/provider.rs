//! A provider's differences, in one place: how a request says whose key it carries, where each
//! endpoint lies below the API base, and which version the Batch API's request lines name.
//!
//! The settings' `provider` picks one [`Dialect`] once, when a client is made; the client, the
//! Batch API and the OCR engines ask it instead of matching the provider themselves, so a
//! provider's ways are written here and nowhere else.

use crate::config::{ApiKey, Provider};

/// How the API key goes with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key as the whole value of the named header (`api-key`, `x-api-key`).
    Header(&'static str),
}

/// An endpoint of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// Chat completions.
    Chat,
    /// File uploads, listings, contents and deletions (batches, file-extract OCR).
    Files,
    /// The Batch API.
    Batches,
    /// Zhipu's layout parsing (the `glm-ocr` engine).
    LayoutParsing,
}

/// What differs from one provider to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    pub auth: Auth,
    chat: &'static [&'static str],
    files: &'static [&'static str],
    batches: &'static [&'static str],
    layout_parsing: &'static [&'static str],
    /// The version a batch request line's chat path names (`/v4/chat/completions`) when the
    /// base URL names none.
    pub batch_version: &'static str,
}

/// Zhipu BigModel.
const ZHIPU: Dialect = Dialect {
    auth: Auth::Bearer,
    chat: &["chat", "completions"],
    files: &["files"],
    batches: &["batches"],
    layout_parsing: &["layout_parsing"],
    batch_version: "v4",
};

/// OpenAI and the servers that speak its API. A server that also speaks Zhipu's layout
/// parsing (a proxy, a test double) is reached at the same path.
const OPENAI: Dialect = Dialect {
    batch_version: "v1",
    ..ZHIPU
};

impl Dialect {
    /// The dialect of `provider`.
    pub fn of(provider: Provider) -> Dialect {
        match provider {
            Provider::Zhipu => ZHIPU,
            Provider::Openai => OPENAI,
        }
    }

    /// The path segments of `endpoint` below the API base.
    pub fn path(&self, endpoint: Endpoint) -> &'static [&'static str] {
        match endpoint {
            Endpoint::Chat => self.chat,
            Endpoint::Files => self.files,
            Endpoint::Batches => self.batches,
            Endpoint::LayoutParsing => self.layout_parsing,
        }
    }

    /// `request` with `key` where this provider looks for it.
    pub fn authorize(
        &self,
        request: reqwest::RequestBuilder,
        key: &ApiKey,
    ) -> reqwest::RequestBuilder {
        match self.auth {
            Auth::Bearer => request.bearer_auth(key.expose()),
            Auth::Header(name) => match reqwest::header::HeaderValue::from_str(key.expose()) {
                // Kept out of reqwest's and hyper's debug output, as a bearer token is.
                Ok(mut value) => {
                    value.set_sensitive(true);
                    request.header(name, value)
                }
                // Not a header value: the request fails to build, as it would with a bearer.
                Err(_) => request.header(name, key.expose()),
            },
        }
    }
}

impl Default for Dialect {
    /// The default provider's (Zhipu's, as the settings' default is).
    fn default() -> Self {
        ZHIPU
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_has_its_batch_version_and_the_same_paths() {
        assert_eq!(Dialect::of(Provider::Zhipu).batch_version, "v4");
        assert_eq!(Dialect::of(Provider::Openai).batch_version, "v1");
        for p in [Provider::Zhipu, Provider::Openai] {
            let d = Dialect::of(p);
            assert_eq!(d.auth, Auth::Bearer);
            assert_eq!(d.path(Endpoint::Chat), ["chat", "completions"]);
            assert_eq!(d.path(Endpoint::Files), ["files"]);
        }
    }
}
