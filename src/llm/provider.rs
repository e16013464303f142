//! How the client speaks a provider's [`Dialect`]: the URL of each endpoint below the API
//! base, and the key where the provider looks for it.
//!
//! What differs between providers is data, one entry per provider in `crate::providers`
//! (adding a provider touches that file only); the settings' `provider` picks its dialect
//! once, when a client is made. The client, the Batch API and the OCR engines ask the
//! dialect here instead of matching the provider themselves, so this code stays the same for
//! every provider.

use crate::config::ApiKey;
pub(crate) use crate::providers::{Auth, Dialect};

/// An endpoint of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// Chat completions.
    Chat,
    /// File uploads, listings, contents and deletions (batches, file-extract OCR).
    Files,
    /// The Batch API.
    Batches,
    /// Zhipu's layout parsing (the `glm-ocr` engine).
    LayoutParsing,
}

impl Dialect {
    /// The path segments of `endpoint` below the API base.
    pub(crate) fn path(&self, endpoint: Endpoint) -> &'static [&'static str] {
        match endpoint {
            Endpoint::Chat => self.chat,
            Endpoint::Files => self.files,
            Endpoint::Batches => self.batches,
            Endpoint::LayoutParsing => self.layout_parsing,
        }
    }

    /// `request` with `key` where this provider looks for it.
    pub(crate) fn authorize(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_endpoint_is_the_path_the_table_gives() {
        for p in crate::providers::Provider::all() {
            let d = p.dialect();
            assert_eq!(d.path(Endpoint::Chat), d.chat);
            assert_eq!(d.path(Endpoint::Files), d.files);
            assert_eq!(d.path(Endpoint::Batches), d.batches);
            assert_eq!(d.path(Endpoint::LayoutParsing), d.layout_parsing);
        }
        assert_eq!(
            Dialect::default().path(Endpoint::Chat),
            ["chat", "completions"]
        );
    }

    #[test]
    fn the_key_goes_where_the_dialect_says() {
        let key = ApiKey::new("sk-test-key");
        let client = reqwest::Client::new();
        let header = |auth: Auth| {
            let dialect = Dialect {
                auth,
                ..Dialect::default()
            };
            let request = dialect
                .authorize(client.get("http://127.0.0.1:9/v1/models"), &key)
                .build()
                .expect("a request");
            request
                .headers()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            header(Auth::Bearer),
            [(
                "authorization".to_string(),
                "Bearer sk-test-key".to_string()
            )]
        );
        assert_eq!(
            header(Auth::Header("x-api-key")),
            [("x-api-key".to_string(), "sk-test-key".to_string())]
        );
    }
}
